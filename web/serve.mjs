// The page's static server: serves web/ and tezgah.wasm with the headers that make the page
// cross-origin isolated (COOP same-origin + COEP require-corp), which the page needs for
// SharedArrayBuffer (its Stop button: a flag the training Worker reads while the engine runs).
//
//   node web/serve.mjs [--port 8023] [--host 127.0.0.1] [--wasm PATH]
//
// /tezgah.wasm is PATH, else the first of build/wasm/tezgah.wasm, build-wasm/tezgah.wasm (the
// outputs of the CMake build and of scripts/build_wasm.sh), read anew on each request. Only
// files under web/ are served (no directory listings, no paths outside it). Prints
// "serving http://HOST:PORT/" on stdout once listening (port 0: a free port, printed).
import { createServer } from 'node:http';
import { readFile, stat } from 'node:fs/promises';
import { dirname, join, normalize, resolve, sep, extname } from 'node:path';
import { fileURLToPath } from 'node:url';

const webDir = dirname(fileURLToPath(import.meta.url));
const repo = resolve(webDir, '..');
const opts = { port: 8023, host: '127.0.0.1', wasm: null };
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  const [k, v0] = argv[i].split('=', 2);
  const v = v0 ?? argv[++i];
  if (k === '--port') opts.port = Number(v);
  else if (k === '--host') opts.host = v;
  else if (k === '--wasm') opts.wasm = resolve(v);
  else {
    console.error(`serve: unknown argument '${argv[i]}' (--port N, --host H, --wasm PATH)`);
    process.exit(2);
  }
}

const TYPES = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8',
  '.wasm': 'application/wasm', '.json': 'application/json', '.txt': 'text/plain; charset=utf-8',
};

async function wasmPath() {
  const cands = opts.wasm ? [opts.wasm] : [join(repo, 'build/wasm/tezgah.wasm'), join(repo, 'build-wasm/tezgah.wasm')];
  for (const p of cands) {
    try { if ((await stat(p)).isFile()) return p; } catch { /* next */ }
  }
  return null;
}

const server = createServer(async (req, res) => {
  const headers = {
    'Cross-Origin-Opener-Policy': 'same-origin',
    'Cross-Origin-Embedder-Policy': 'require-corp',
    'Cache-Control': 'no-store',
  };
  try {
    const url = new URL(req.url, 'http://x');
    let path = decodeURIComponent(url.pathname);
    if (path === '/') path = '/index.html';
    let file;
    if (path === '/tezgah.wasm') {
      file = await wasmPath();
      if (!file) {
        res.writeHead(404, { ...headers, 'Content-Type': 'text/plain' });
        res.end('tezgah.wasm not built: run scripts/build_wasm.sh (or cmake --build build)\n');
        return;
      }
    } else {
      file = normalize(join(webDir, path));
      if (!file.startsWith(webDir + sep)) throw Object.assign(new Error('outside'), { code: 'ENOENT' });
    }
    const body = await readFile(file);
    res.writeHead(200, { ...headers, 'Content-Type': TYPES[extname(file)] || 'application/octet-stream' });
    res.end(req.method === 'HEAD' ? undefined : body);
  } catch (e) {
    res.writeHead(e.code === 'ENOENT' || e.code === 'EISDIR' ? 404 : 500, { ...headers, 'Content-Type': 'text/plain' });
    res.end(`${e.code || e.message}\n`);
  }
});
server.listen(opts.port, opts.host, () => {
  const { address, port } = server.address();
  console.log(`serving http://${address}:${port}/`);
});
