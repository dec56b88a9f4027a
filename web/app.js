// The page: corpus, model size, training controls, loss plot, sample and download. The engine
// runs in worker.js (tezgah.wasm under WASI); this file only talks to it with messages.
// window.tezgah holds the state (losses, rates, results) for the headless-browser test
// (tests/test_browser.sh) and for the curious.
const $ = (id) => document.getElementById(id);
const SIZES = { // the flags of `tezgah train` for each size
  tiny: ['--n-layer', '2', '--n-head', '4', '--d-model', '64', '--vocab-size', '320', '-T', '64'],
  small: ['--n-layer', '4', '--n-head', '4', '--d-model', '128', '--vocab-size', '1024', '-T', '128'],
  medium: ['--n-layer', '6', '--n-head', '8', '--d-model', '256', '--vocab-size', '4096', '-T', '256'],
};
const state = window.tezgah = {
  ready: false, training: false, rows: [], done: null, sample: null, error: null, args: null,
};
const worker = new Worker('worker.js', { type: 'module' });
// Stop: a shared flag the worker reads while the engine runs (needs cross-origin isolation:
// web/serve.mjs sends the headers). Without it Stop is unavailable and says why.
const stopBuf = self.crossOriginIsolated ? new SharedArrayBuffer(4) : null;
let corpusBytes = null;

function setStatus(t) { $('status').textContent = t; }
function buttons() {
  const have = corpusBytes && corpusBytes.length > 0;
  $('train').disabled = !state.ready || state.training || !have;
  $('stop').disabled = !state.training || !stopBuf;
  $('stop').title = stopBuf ? '' : 'needs a cross-origin isolated page (serve with node web/serve.mjs)';
  $('download').disabled = state.training || !state.done;
  $('sampleBtn').disabled = state.training || !state.done;
}
function setCorpus(bytes, what) {
  corpusBytes = bytes;
  $('corpusInfo').textContent = bytes.length ? `${what}: ${(bytes.length / 1024).toFixed(1)} kB` : '';
  buttons();
}
$('file').addEventListener('change', async () => {
  const f = $('file').files[0];
  if (f) setCorpus(new Uint8Array(await f.arrayBuffer()), f.name);
});
$('corpus').addEventListener('input', () => setCorpus(new TextEncoder().encode($('corpus').value), 'pasted text'));

function draw() {
  const cv = $('plot'), g = cv.getContext('2d');
  const W = cv.width, H = cv.height, L = 50, R = 10, T = 10, B = 25;
  g.clearRect(0, 0, W, H);
  const rows = state.rows.filter((r) => Number.isFinite(r.loss));
  const steps = Number($('steps').value) || 1;
  const maxStep = Math.max(steps, ...rows.map((r) => r.step));
  // a step record's val_loss was measured before that step (after step - 1), as `tezgah plot` and
  // `info` read metrics.jsonl; the final record's after its step
  const vals = rows.filter((r) => Number.isFinite(r.val_loss)).map((r) => ({ step: r.step - 1, val_loss: r.val_loss }));
  if (state.final && Number.isFinite(state.final.val_loss)) vals.push(state.final);
  const ys = rows.map((r) => r.loss).concat(vals.map((r) => r.val_loss));
  if (!ys.length) return;
  let lo = Math.min(...ys), hi = Math.max(...ys);
  if (hi - lo < 1e-6) { lo -= 0.5; hi += 0.5; }
  const x = (s) => L + (W - L - R) * (s / maxStep), y = (v) => T + (H - T - B) * (1 - (v - lo) / (hi - lo));
  g.strokeStyle = '#999'; g.fillStyle = '#444'; g.font = '11px sans-serif';
  g.beginPath(); g.moveTo(L, T); g.lineTo(L, H - B); g.lineTo(W - R, H - B); g.stroke();
  for (let i = 0; i <= 4; i++) {
    const v = lo + (hi - lo) * i / 4;
    g.fillText(v.toFixed(2), 5, y(v) + 4);
  }
  g.fillText(`step ${maxStep}`, W - R - 50, H - 8);
  g.fillText('0', L, H - 8);
  g.strokeStyle = '#1f6fd1'; g.lineWidth = 1.5; g.beginPath();
  rows.forEach((r, i) => (i ? g.lineTo(x(r.step), y(r.loss)) : g.moveTo(x(r.step), y(r.loss))));
  g.stroke();
  g.fillStyle = '#d1461f';
  for (const r of vals) { g.beginPath(); g.arc(x(r.step), y(r.val_loss), 3, 0, 7); g.fill(); }
  g.fillStyle = '#1f6fd1'; g.fillText('train loss', W - R - 160, T + 10);
  g.fillStyle = '#d1461f'; g.fillText('● validation', W - R - 90, T + 10);
}

function progress() {
  const r = state.rows[state.rows.length - 1];
  if (!r) return;
  const val = state.rows.filter((x) => Number.isFinite(x.val_loss)).pop();
  setStatus(`step ${r.step}/${$('steps').value}  loss ${r.loss.toFixed(4)}  ${Math.round(r.tok_per_s)} tokens/s` +
    (val ? `  val ${val.val_loss.toFixed(4)}@${val.step - 1}` : '')); // measured after step - 1 (see draw)
}

worker.onmessage = (ev) => {
  const m = ev.data;
  if (m.type === 'ready') {
    state.ready = true;
    state.webgpu = m.webgpu || null;
    // the backend: WebGPU where it can run here, else the CPU (and the option says why)
    const opt = $('backend').querySelector('option[value="webgpu"]');
    opt.disabled = !state.webgpu;
    opt.textContent = state.webgpu ? `WebGPU (${state.webgpu})` : `WebGPU: ${m.webgpuWhy}`;
    if (state.webgpu) $('backend').value = 'webgpu';
    $('ready').textContent = 'tezgah.wasm ready' + (stopBuf ? '' : ' (Stop unavailable: page not cross-origin isolated)');
  } else if (m.type === 'metrics') {
    state.rows.push(...m.rows.filter((r) => Number.isFinite(r.step) && !r.final));
    // the end-of-run validation ({step, val_loss, final: true}) is drawn as a dot, not a step
    for (const r of m.rows.filter((r) => r.final)) state.final = r;
    progress(); draw();
  } else if (m.type === 'log') {
    const log = $('log');
    log.textContent = (log.textContent + m.text.replace(/\r/g, '\n')).slice(-20000);
    log.scrollTop = log.scrollHeight;
    if (!state.rows.length) {
      const last = m.text.trim().split('\n').pop();
      if (last) setStatus(last.replace(/\r/g, ''));
    }
  } else if (m.type === 'done' && m.cmd === 'train') {
    state.training = false;
    state.done = { rc: m.rc, seconds: m.seconds };
    const ok = m.rc === 0 || m.rc === 130;
    const tail = m.stderr.trim().split('\n').filter((l) => l.startsWith('done:') || l.startsWith('tezgah: error')).join(' ');
    setStatus((ok ? (m.rc === 130 ? 'stopped, checkpoint written: ' : '') : `train failed (exit ${m.rc}): `) +
      `${tail} (${m.seconds.toFixed(1)} s)`);
    draw();
    if (!ok) { state.done = null; state.error = m.stderr.trim().split('\n').pop(); }
    buttons();
  } else if (m.type === 'done' && m.cmd === 'sample') {
    state.sampling = false;
    state.sample = { rc: m.rc, text: m.stdout };
    $('sample').textContent = m.rc === 0 ? m.stdout : m.stderr.trim().split('\n').pop();
    buttons();
  } else if (m.type === 'file') {
    const a = document.createElement('a');
    a.href = URL.createObjectURL(new Blob([m.bytes], { type: 'application/octet-stream' }));
    a.download = m.path.split('/').pop();
    document.body.appendChild(a); a.click(); a.remove();
    setTimeout(() => URL.revokeObjectURL(a.href), 10000);
  } else if (m.type === 'error') {
    state.error = m.message;
    state.training = false;
    setStatus(`error: ${m.message}`);
    buttons();
  }
};

$('train').addEventListener('click', () => {
  state.rows = []; state.done = null; state.final = null; state.sample = null; state.error = null;
  $('sample').textContent = ''; $('log').textContent = '';
  const args = [...SIZES[$('size').value], '--steps', String(Number($('steps').value)),
    '-B', String(Number($('batch').value)), '--lr', $('lr').value.trim(), '--seed', String(Number($('seed').value)),
    '--sample-tokens', '0', '--backend', $('backend').value];
  state.args = args;
  state.backend = $('backend').value;
  state.training = true;
  if (stopBuf) Atomics.store(new Int32Array(stopBuf), 0, 0);
  setStatus('preparing data (training the BPE tokenizer, encoding the corpus)…');
  draw(); buttons();
  worker.postMessage({ type: 'train', corpus: corpusBytes, args, stop: stopBuf });
});
$('stop').addEventListener('click', () => {
  Atomics.store(new Int32Array(stopBuf), 0, 1);
  setStatus('stopping after this step…');
});
$('sampleBtn').addEventListener('click', () => {
  const args = ['--tokens', String(Number($('tokens').value)), '--temperature', $('temperature').value.trim(),
    '--backend', state.backend || 'cpu'];
  if ($('prompt').value) args.push('--prompt', $('prompt').value);
  state.sample = null; state.sampling = true;
  $('sample').textContent = 'sampling…';
  $('sampleBtn').disabled = true;
  worker.postMessage({ type: 'sample', args });
});
$('download').addEventListener('click', () => worker.postMessage({ type: 'file', path: 'run/checkpoint.tzc' }));

setCorpus(new TextEncoder().encode($('corpus').value), 'pasted text');
worker.postMessage({ type: 'init', url: 'tezgah.wasm' });
buttons();
