// Drive the page in headless Chromium (playwright-core, Debian's chromium) the way a user does:
// load a corpus file, pick the tiny model, train N steps, sample greedily, download the
// checkpoint; optionally a second run stopped with the Stop button. Writes what happened as
// JSON for tests/test_browser.sh, which compares it with the native CLI.
//
//   node web/browser_test.mjs --corpus FILE --steps N --out DIR [--chromium PATH] [--wasm PATH]
//                             [--size tiny|small|medium] [--batch B] [--seed S] [--screenshot PNG] [--stop-test]
//
// DIR/result.json: {losses: [per-step loss], tok_per_s, rc, seconds, sample, chromium, stop: {...}}
// DIR/checkpoint.tzc: the downloaded checkpoint. Exit 0 when the page did all of it, 1 with a
// line naming what failed.
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const webDir = dirname(fileURLToPath(import.meta.url));
const opt = { corpus: null, steps: 10, out: null, chromium: '/usr/bin/chromium', stopTest: false, wasm: null, size: 'tiny', batch: 4, seed: 7 };
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  const a = argv[i];
  if (a === '--stop-test') opt.stopTest = true;
  else if (a.startsWith('--')) opt[a.slice(2).replace(/-(.)/g, (_, c) => c.toUpperCase())] = argv[++i];
}
if (!opt.corpus || !opt.out) {
  console.error('usage: node web/browser_test.mjs --corpus FILE --steps N --out DIR [--chromium PATH] [--wasm PATH] [--stop-test]');
  process.exit(2);
}
const note = (msg) => console.error(`browser_test: ${msg}`);
const die = (msg) => { console.error(`browser_test: ${msg}`); process.exit(1); };

// the page's server on a free port
const srvArgs = [join(webDir, 'serve.mjs'), '--port', '0'];
if (opt.wasm) srvArgs.push('--wasm', opt.wasm);
const server = spawn(process.execPath, srvArgs, { stdio: ['ignore', 'pipe', 'inherit'] });
const url = await new Promise((res, rej) => {
  let buf = '';
  server.stdout.on('data', (d) => { buf += d; const m = buf.match(/serving (http:\S+)/); if (m) res(m[1]); });
  server.on('exit', (c) => rej(new Error(`serve.mjs exited with ${c}`)));
  setTimeout(() => rej(new Error('serve.mjs did not start in 10 s')), 10000);
});

const browser = await chromium.launch({
  executablePath: opt.chromium, headless: true,
  args: process.getuid && process.getuid() === 0 ? ['--no-sandbox'] : [],
});
const result = { chromium: browser.version(), url };
try {
  const ctx = await browser.newContext({ acceptDownloads: true });
  const page = await ctx.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  note(`chromium ${browser.version()}, page ${url}`);
  await page.goto(url);
  await page.waitForFunction(() => window.tezgah && (window.tezgah.ready || window.tezgah.error), null, { timeout: 60000 });
  if (!(await page.evaluate(() => window.tezgah.ready))) die(`page not ready: ${await page.evaluate(() => window.tezgah.error)}`);
  result.crossOriginIsolated = await page.evaluate(() => self.crossOriginIsolated);

  const trainRun = async (steps) => {
    await page.setInputFiles('#file', opt.corpus);
    await page.selectOption('#size', opt.size);
    await page.fill('#steps', String(steps));
    await page.fill('#batch', String(opt.batch));
    await page.fill('#seed', String(opt.seed));
    await page.click('#train');
  };
  const waitDone = async (ms) => {
    await page.waitForFunction(() => window.tezgah.done || window.tezgah.error || (!window.tezgah.training && window.tezgah.rows.length === 0 && window.tezgah.done === null && window.tezgah.error), null, { timeout: ms, polling: 200 });
    return page.evaluate(() => ({ done: window.tezgah.done, error: window.tezgah.error, rows: window.tezgah.rows, args: window.tezgah.args }));
  };

  note('page ready; training');
  // 1. train N steps
  const t0 = Date.now();
  await trainRun(opt.steps);
  const r = await waitDone(600000);
  if (!r.done) die(`training failed: ${r.error}`);
  result.rc = r.done.rc;
  result.seconds = r.done.seconds;
  result.args = r.args;
  result.losses = r.rows.map((x) => x.loss);
  result.steps = r.rows.map((x) => x.step);
  result.tok_per_s = r.rows.length ? r.rows[r.rows.length - 1].tok_per_s : null;
  result.wall_s = (Date.now() - t0) / 1000;
  if (result.rc !== 0) die(`train exited with ${result.rc}`);

  note(`trained: ${result.losses.length} steps in ${result.seconds.toFixed(1)} s; sampling`);
  // 2. sample greedily
  await page.fill('#prompt', 'the');
  await page.fill('#tokens', '40');
  await page.fill('#temperature', '0');
  await page.click('#sampleBtn');
  await page.waitForFunction(() => window.tezgah.sample || window.tezgah.error, null, { timeout: 120000 });
  result.sample = await page.evaluate(() => window.tezgah.sample);
  if (!result.sample || result.sample.rc !== 0) die(`sample failed: ${JSON.stringify(result.sample)}`);

  if (opt.screenshot) await page.screenshot({ path: opt.screenshot, fullPage: true });
  // 3. download the checkpoint
  const [dl] = await Promise.all([page.waitForEvent('download', { timeout: 60000 }), page.click('#download')]);
  await dl.saveAs(join(opt.out, 'checkpoint.tzc'));
  result.download = dl.suggestedFilename();

  note('downloaded the checkpoint');
  // 4. Stop: a long run stopped by the button after a few steps writes its checkpoint (exit 130)
  if (opt.stopTest) {
    await trainRun(100000);
    await page.waitForFunction(() => window.tezgah.rows.length >= 3 || window.tezgah.error, null, { timeout: 300000, polling: 100 });
    await page.click('#stop');
    const s = await waitDone(120000);
    result.stop = { rc: s.done && s.done.rc, steps: s.rows.length, error: s.error };
  }
  result.errors = errors;
} finally {
  writeFileSync(join(opt.out, 'result.json'), JSON.stringify(result, null, 1));
  await browser.close();
  server.kill();
}
console.log(`browser_test: ${result.losses.length} steps in ${result.seconds.toFixed(1)} s, ` +
  `${Math.round(result.tok_per_s)} tok/s, sample ${JSON.stringify(result.sample.text.slice(0, 60))}` +
  (result.stop ? `, stop: exit ${result.stop.rc} after ${result.stop.steps} steps` : ''));
