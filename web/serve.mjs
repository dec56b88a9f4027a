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
import { existsSync } from 'node:fs';
import { dirname, join, normalize, resolve, sep, extname } from 'node:path';
import { fileURLToPath } from 'node:url';

const webDir = dirname(fileURLToPath(import.meta.url));
const repo = resolve(webDir, '..');
const opts = { port: 8023, host: '127.0.0.1', wasm: null };
const argv = process.argv.slice(2);
// One line and exit 2 for a bad argument (no stack traces): the flag and the value it got.
const bad = (msg) => { console.error(`serve: ${msg} (--port N, --host H, --wasm PATH)`); process.exit(2); };
for (let i = 0; i < argv.length; i++) {
  const arg = argv[i];
  const [k, v0] = arg.split('=', 2);
  if (!['--port', '--host', '--wasm'].includes(k)) bad(`unknown argument '${arg}'`);
  const v = v0 ?? argv[++i];
  if (v === undefined || v === '') bad(`${k} needs a value`);
  if (k === '--port') {
    if (!/^[0-9]+$/.test(v) || Number(v) > 65535) bad(`--port: '${v}' is not a port number in [0, 65535]`);
    opts.port = Number(v);
  } else if (k === '--host') opts.host = v;
  else {
    opts.wasm = resolve(v);
    if (!existsSync(opts.wasm)) bad(`--wasm: ${v}: no such file`);
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
server.on('error', (e) => { // port in use, an address not of this machine, ...: one line
  console.error(`serve: cannot listen on ${opts.host}:${opts.port}: ${e.code || e.message}`);
  process.exit(1);
});
server.listen(opts.port, opts.host, () => {
  const { address, port } = server.address();
  console.log(`serving http://${address}:${port}/`);
});
