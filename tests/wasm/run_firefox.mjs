// Run a wasm32-wasi program in headless Firefox ESR (Debian's firefox-esr) and report its output
// and exit status: run_browser.mjs's counterpart without a driver. playwright-core drives only
// Playwright's own patched Firefox, so this script starts Debian's binary itself on a fresh
// profile and the page reports back to the server that serves it (POST /log, POST /result).
//
//   node tests/wasm/run_firefox.mjs [--firefox PATH] [--npm DIR] [--file NAME=PATH]...
//        [--out DIR] [--timeout S] [--no-gpu] PROGRAM.wasm [ARGS...]
//
// Serves web/ at /web/, the folder of PROGRAM.wasm at /build/ and the npm packages (DIR,
// default web/node_modules: @bjorn3/browser_wasi_shim) at /npm/ on 127.0.0.1 (a secure context,
// which WebGPU needs), and "/" is a page that runs the program with web/wasm_run.mjs on the
// page's own thread. The profile (a temporary folder, removed afterwards) has a user.js with
// dom.webgpu.enabled and gfx.webgpu.ignore-blocklist (Firefox's WebGPU on Linux is off by
// default and its blocklist refuses a software adapter; with both, Firefox ESR 153 gives
// lavapipe's Vulkan), and no slow-script dialog. --file puts a host file into the program's
// working folder; --out writes the files the folder holds after the run into DIR; --no-gpu
// gives the program no navigator.gpu. Prints the program's stdout / stderr lines, then
// "run_firefox: exit N in S s (program S s; Firefox/V)"; exits with the program's status;
// 124 on timeout; 77 (with a SKIPPED line) without firefox-esr or the shim.
import fs from 'node:fs';
import os from 'node:os';
import http from 'node:http';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { sendStatic } from './static_files.mjs';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const argv = process.argv.slice(2);
const opt = { firefox: process.env.TEZGAH_FIREFOX || '/usr/bin/firefox-esr', npm: path.join(repo, 'web/node_modules'),
  files: {}, out: null, timeout: 600, gpu: true };
while (argv.length && argv[0].startsWith('--')) {
  const a = argv.shift();
  if (a === '--firefox') opt.firefox = argv.shift();
  else if (a === '--npm') opt.npm = path.resolve(argv.shift());
  else if (a === '--file') {
    const [k, v] = argv.shift().split(/=(.*)/s);
    opt.files[k] = v;
  } else if (a === '--out') opt.out = path.resolve(argv.shift());
  else if (a === '--timeout') opt.timeout = Number(argv.shift());
  else if (a === '--no-gpu') opt.gpu = false;
  else {
    console.error(`run_firefox: unknown option ${a}`);
    process.exit(2);
  }
}
if (!argv.length) {
  console.error('usage: run_firefox.mjs [options] PROGRAM.wasm [ARGS...]');
  process.exit(2);
}
const wasm = path.resolve(argv.shift());
const args = [path.basename(wasm, '.wasm'), ...argv];
const skip = (why) => {
  console.log(`SKIPPED: ${why}`);
  process.exit(77);
};
if (!fs.existsSync(opt.firefox)) skip(`no Firefox at ${opt.firefox} (scripts/setup_wasm.sh installs Debian's firefox-esr; TEZGAH_FIREFOX=PATH)`);
const shimDir = path.join(opt.npm, '@bjorn3/browser_wasi_shim/dist');
if (!fs.existsSync(path.join(shimDir, 'index.js'))) skip(`no @bjorn3/browser_wasi_shim in ${opt.npm} (scripts/setup_wasm.sh installs it)`);
if (!fs.existsSync(wasm)) {
  console.error(`run_firefox: no such file ${wasm}`);
  process.exit(2);
}

// The job the page fetches: program, arguments, input files (base64), whether it gets a GPU.
const job = { args, gpu: opt.gpu, files: {} };
for (const [k, v] of Object.entries(opt.files)) job.files[k] = fs.readFileSync(v).toString('base64');

// The page: fetch the job, run it, send every output line and then the result back.
const page = `<!doctype html><meta charset="utf-8"><title>tezgah wasm test (firefox)</title>
<script type="module">
const post = (url, body) => fetch(url, { method: 'POST', body: JSON.stringify(body) });
const b64 = (s) => Uint8Array.from(atob(s), (c) => c.charCodeAt(0));
const enc = (u) => { let s = ''; for (let i = 0; i < u.length; i += 0x8000) s += String.fromCharCode(...u.subarray(i, i + 0x8000)); return btoa(s); };
let lines = [], pending = Promise.resolve();
const log = (l) => { lines.push(l); };
const flush = () => { if (lines.length) { const b = lines; lines = []; pending = pending.then(() => post('/log', b)); } };
const timer = setInterval(flush, 200);
const info = { ua: navigator.userAgent, gpu: !!navigator.gpu,
  jspi: typeof WebAssembly.Suspending === 'function' && typeof WebAssembly.promising === 'function' };
try {
  const job = await (await fetch('/job.json')).json();
  const shim = await import('/npm/@bjorn3/browser_wasi_shim/dist/index.js');
  const { runWasm } = await import('/web/wasm_run.mjs');
  const files = {};
  for (const [k, v] of Object.entries(job.files)) files[k] = b64(v);
  const res = await runWasm({ shim, url: '/build/' + job.args[0] + '.wasm', args: job.args, files,
    gpu: job.gpu ? navigator.gpu : null, onStdout: log, onStderr: log });
  const out = {};
  for (const [k, v] of Object.entries(res.files)) if (!(k in files)) out[k] = enc(v);
  clearInterval(timer); flush(); await pending;
  await post('/result', { ...info, code: res.code, ms: res.ms, files: out });
} catch (e) {
  clearInterval(timer); flush(); await pending;
  await post('/result', { ...info, code: 1, error: String(e && e.stack ? e.message + '\\n' + e.stack : e) });
}
</script>`;

const roots = { '/web/': path.join(repo, 'web'), '/build/': path.dirname(wasm), '/npm/': opt.npm };
let done;
const result = new Promise((r) => { done = r; });
const body = (req) => new Promise((r) => {
  const parts = [];
  req.on('data', (d) => parts.push(d));
  req.on('end', () => r(JSON.parse(Buffer.concat(parts).toString('utf8'))));
});
const server = http.createServer(async (req, res) => {
  const u = decodeURIComponent(new URL(req.url, 'http://x').pathname);
  if (req.method === 'POST') {
    const b = await body(req);
    if (u === '/log') for (const l of b) console.log(l);
    else if (u === '/result') done(b);
    return res.end('ok');
  }
  if (u === '/') {
    res.setHeader('content-type', 'text/html');
    return res.end(page);
  }
  if (u === '/job.json') {
    res.setHeader('content-type', 'application/json');
    return res.end(JSON.stringify(job));
  }
  if (sendStatic(roots, u, res)) return;
  res.statusCode = 404;
  res.end('not found');
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const base = `http://127.0.0.1:${server.address().port}`;

// A fresh profile: the prefs, and none of the first-run pages, update or telemetry traffic
// (the machine may have no network; each would only slow the start).
const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'tezgah-firefox-'));
const prefs = {
  'dom.webgpu.enabled': true,
  'gfx.webgpu.ignore-blocklist': true,
  'dom.max_script_run_time': 0,
  'browser.shell.checkDefaultBrowser': false,
  'browser.startup.homepage_override.mstone': 'ignore',
  'startup.homepage_welcome_url': 'about:blank',
  'browser.aboutwelcome.enabled': false,
  'datareporting.policy.dataSubmissionEnabled': false,
  'toolkit.telemetry.reportingpolicy.firstRun': false,
  'app.update.enabled': false,
  'browser.safebrowsing.malware.enabled': false,
  'browser.safebrowsing.phishing.enabled': false,
  'extensions.update.enabled': false,
  'network.captive-portal-service.enabled': false,
  'network.connectivity-service.enabled': false,
};
fs.writeFileSync(path.join(profile, 'user.js'),
  Object.entries(prefs).map(([k, v]) => `user_pref(${JSON.stringify(k)}, ${JSON.stringify(v)});\n`).join(''));

const t0 = Date.now();
const ff = spawn(opt.firefox, ['--headless', '--no-remote', '--profile', profile, base + '/'],
  { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, MOZ_CRASHREPORTER_DISABLE: '1' } });
let ffLog = '';
ff.stdout.on('data', (d) => { ffLog += d; });
ff.stderr.on('data', (d) => { ffLog += d; });
const exited = new Promise((r) => ff.on('exit', (c, s) => r(`firefox exited (${s || c}) before the page reported`)));
let timer;
const timeout = new Promise((r) => { timer = setTimeout(() => r(`no result within ${opt.timeout} s`), opt.timeout * 1000); });
const r = await Promise.race([result, exited, timeout]);
clearTimeout(timer);
ff.kill('SIGTERM');
await Promise.race([new Promise((res) => ff.on('exit', res)), new Promise((res) => setTimeout(res, 5000))]);
if (ff.exitCode === null && ff.signalCode === null) ff.kill('SIGKILL');
server.close();
fs.rmSync(profile, { recursive: true, force: true });
if (typeof r === 'string') {
  console.log(`run_firefox: FAIL: ${r}`);
  if (ffLog.trim()) console.log(`run_firefox: firefox said:\n${ffLog.trim().split('\n').slice(-20).join('\n')}`);
  process.exit(r.startsWith('no result') ? 124 : 1);
}
if (r.error) console.log(`run_firefox: the program threw: ${r.error}`);
if (opt.out && r.files) {
  fs.mkdirSync(opt.out, { recursive: true });
  for (const [k, v] of Object.entries(r.files)) {
    fs.mkdirSync(path.dirname(path.join(opt.out, k)), { recursive: true });
    fs.writeFileSync(path.join(opt.out, k), Buffer.from(v, 'base64'));
  }
}
const ver = (r.ua.match(/Firefox\/[\d.]+/) || ['?'])[0];
console.log(`run_firefox: exit ${r.code} in ${((Date.now() - t0) / 1000).toFixed(1)} s (program ${((r.ms || 0) / 1000).toFixed(1)} s; ${ver}; navigator.gpu ${r.gpu ? 'yes' : 'no'}; JSPI ${r.jspi ? 'yes' : 'no'})`);
process.exit(r.code);
