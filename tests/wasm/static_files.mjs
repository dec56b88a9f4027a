// The static half of the wasm test runners' local servers (run_browser.mjs, run_firefox.mjs):
// this repository's web/ at /web/, the program's folder at /build/, the npm packages at /npm/.
import fs from 'node:fs';
import path from 'node:path';

const TYPES = { '.mjs': 'text/javascript', '.js': 'text/javascript', '.wasm': 'application/wasm', '.html': 'text/html' };

// roots: { '/prefix/': absolute folder }. Answers a request for a file under one of them (or the
// browser's /favicon.ico, with nothing) and returns true; false when the path is none of those
// (the runner then answers it or sends 404). Paths that leave their folder are not served.
export function sendStatic(roots, u, res) {
  if (u === '/favicon.ico') {
    res.statusCode = 204;
    res.end();
    return true;
  }
  for (const [pre, dir] of Object.entries(roots)) {
    if (!u.startsWith(pre)) continue;
    const f = path.resolve(dir, u.slice(pre.length));
    if (!f.startsWith(dir + path.sep) || !fs.existsSync(f) || !fs.statSync(f).isFile()) return false;
    res.setHeader('content-type', TYPES[path.extname(f)] || 'application/octet-stream');
    fs.createReadStream(f).pipe(res);
    return true;
  }
  return false;
}
