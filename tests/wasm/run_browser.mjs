// Run a wasm32-wasi program in headless Chromium with WebGPU (SwiftShader's Vulkan on a machine
// without a GPU) and report its output and exit status: the browser half of the wasm tests.
//
//   node tests/wasm/run_browser.mjs [--chromium PATH] [--npm DIR] [--file NAME=PATH]...
//        [--out DIR] [--timeout S] [--no-gpu] [--env K=V]... [--log-pipelines] PROGRAM.wasm [ARGS...]
//
// Serves this repository's web/ at /web/, the folder of PROGRAM.wasm at /build/ and the npm
// packages (DIR, default web/node_modules: playwright-core, @bjorn3/browser_wasi_shim)
// at /npm/ on 127.0.0.1 (WebGPU needs a secure context: localhost is one), opens a blank page
// and runs the program there with web/wasm_run.mjs. --file puts a host file into the
// program's working folder; --out writes the files the folder holds after the run into DIR.
// --no-gpu gives the program no navigator.gpu (the CPU-fallback path). --env puts K=V into the
// program's WASI environment (getenv: e.g. the WebGPU backend's kernel-variant switches).
// --log-pipelines prints a line per compute pipeline created (label, ms since the start) and per
// wait that blocked (how long): where SwiftShader's compile time goes. Prints the program's
// stdout / stderr lines as they come, then "run_browser: exit N in S s (browser ...)"; exits with
// the program's status. 77 (with a SKIPPED line) when Chromium or playwright-core is missing.
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { sendStatic } from './static_files.mjs';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const argv = process.argv.slice(2);
const opt = { chromium: process.env.TEZGAH_CHROMIUM || '/usr/bin/chromium', npm: path.join(repo, 'web/node_modules'),
  files: {}, out: null, timeout: 600, gpu: true, env: [], logPipes: false };
while (argv.length && argv[0].startsWith('--')) {
  const a = argv.shift();
  if (a === '--chromium') opt.chromium = argv.shift();
  else if (a === '--npm') opt.npm = path.resolve(argv.shift());
  else if (a === '--file') {
    const [k, v] = argv.shift().split(/=(.*)/s);
    opt.files[k] = v;
  } else if (a === '--out') opt.out = path.resolve(argv.shift());
  else if (a === '--timeout') opt.timeout = Number(argv.shift());
  else if (a === '--no-gpu') opt.gpu = false;
  else if (a === '--env') opt.env.push(argv.shift());
  else if (a === '--log-pipelines') opt.logPipes = true;
  else if (a === '--log-compiles') opt.logPipes = 'async';
  else {
    console.error(`run_browser: unknown option ${a}`);
    process.exit(2);
  }
}
if (!argv.length) {
  console.error('usage: run_browser.mjs [options] PROGRAM.wasm [ARGS...]');
  process.exit(2);
}
const wasm = path.resolve(argv.shift());
const args = [path.basename(wasm, '.wasm'), ...argv];
const skip = (why) => {
  console.log(`SKIPPED: ${why}`);
  process.exit(77);
};
if (!fs.existsSync(opt.chromium)) skip(`no Chromium at ${opt.chromium} (scripts/setup.sh installs Debian's chromium)`);
let chromium;
try {
  chromium = createRequire(path.join(opt.npm, 'x.js'))('playwright-core').chromium;
} catch (e) {
  skip(`no playwright-core in ${opt.npm} (scripts/setup.sh installs it)`);
}
const shimDir = path.join(opt.npm, '@bjorn3/browser_wasi_shim/dist');
if (!fs.existsSync(path.join(shimDir, 'index.js'))) skip(`no @bjorn3/browser_wasi_shim in ${opt.npm} (scripts/setup.sh installs it)`);
if (!fs.existsSync(wasm)) {
  console.error(`run_browser: no such file ${wasm}`);
  process.exit(2);
}

const roots = { '/web/': path.join(repo, 'web'), '/build/': path.dirname(wasm), '/npm/': opt.npm };
const server = http.createServer((req, res) => {
  const u = decodeURIComponent(new URL(req.url, 'http://x').pathname);
  if (u === '/') {
    res.setHeader('content-type', 'text/html');
    return res.end('<!doctype html><meta charset="utf-8"><title>tezgah wasm test</title>');
  }
  if (sendStatic(roots, u, res)) return;
  res.statusCode = 404;
  res.end('not found');
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const base = `http://127.0.0.1:${server.address().port}`;

// Debian's chromium 156 headless: --enable-unsafe-webgpu alone gives WebGPU an adapter on
// SwiftShader's Vulkan (a CPU implementation) on a machine without a GPU (checked 2026-12-02;
// adding --enable-features=Vulkan --use-vulkan=swiftshader changes nothing there)
const flags = (process.env.TEZGAH_CHROMIUM_FLAGS || '--enable-unsafe-webgpu').split(' ').filter(Boolean);
const t0 = Date.now();
const browser = await chromium.launch({ executablePath: opt.chromium, headless: true, args: flags });
let code = 1;
const killer = setTimeout(async () => {
  console.log(`run_browser: FAIL: no result within ${opt.timeout} s`);
  await browser.close();
  process.exit(124);
}, opt.timeout * 1000);
try {
  const page = await browser.newPage();
  page.on('console', (m) => console.log(m.text()));
  page.on('pageerror', (e) => console.log(`run_browser: page error: ${e.message}`));
  await page.goto(base + '/');
  const files = {};
  for (const [k, v] of Object.entries(opt.files)) files[k] = Array.from(fs.readFileSync(v));
  const r = await page.evaluate(async ({ args, files, gpu, env, logPipes }) => {
    if (logPipes) globalThis.tzwLogPipelines = logPipes;
    const shim = await import('/npm/@bjorn3/browser_wasi_shim/dist/index.js');
    const { runWasm } = await import('/web/wasm_run.mjs');
    const f = {};
    for (const [k, v] of Object.entries(files)) f[k] = new Uint8Array(v);
    try {
      const res = await runWasm({ shim, url: '/build/' + args[0] + '.wasm', args, env, files: f,
        gpu: gpu ? navigator.gpu : null, onStdout: (l) => console.log(l), onStderr: (l) => console.log(l) });
      const out = {};
      for (const [k, v] of Object.entries(res.files)) if (!(k in f)) out[k] = Array.from(v);
      return { code: res.code, ms: res.ms, files: out, ua: navigator.userAgent };
    } catch (e) {
      return { code: 1, error: String(e && e.stack ? e.stack : e), ua: navigator.userAgent };
    }
  }, { args, files, gpu: opt.gpu, env: opt.env, logPipes: opt.logPipes });
  if (r.error) console.log(`run_browser: the program threw: ${r.error}`);
  if (opt.out && r.files) {
    fs.mkdirSync(opt.out, { recursive: true });
    for (const [k, v] of Object.entries(r.files)) {
      fs.mkdirSync(path.dirname(path.join(opt.out, k)), { recursive: true });
      fs.writeFileSync(path.join(opt.out, k), Buffer.from(v));
    }
  }
  code = r.code;
  const ver = (r.ua.match(/Chrome\/[\d.]+/) || ['?'])[0];
  console.log(`run_browser: exit ${code} in ${((Date.now() - t0) / 1000).toFixed(1)} s (program ${((r.ms || 0) / 1000).toFixed(1)} s; ${ver}; flags ${flags.join(' ')})`);
} finally {
  clearTimeout(killer);
  await browser.close();
  server.close();
}
process.exit(code);
