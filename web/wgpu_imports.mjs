// The "wgpu" imports of a tezgah wasm build: the webgpu.h functions that the WebGPU backend
// calls (src/backend/webgpu/webgpu_api.h, TZ_WGPU_FUNCS), implemented on the page's
// navigator.gpu. The C side is src/backend/webgpu/wgpu_wasm.c, which fills the backend's function
// table with these imports and with C wrappers around the "tzw_*" ones; docs/BROWSER.md
// ("WebGPU inside wasm") describes the contract. In short:
//  - GPU objects live in a handle table here; C sees small integers (0 is NULL).
//  - No struct layout is written in this file: tzw_init() receives the wasm32 offsets, sizes
//    and constants as JSON from the same binary (offsetof/sizeof of webgpu_api.h's structs
//    compiled for wasm32), and memory is read only through those names (`f(struct, member)`
//    throws on a name that is not there). tests/wasm/check_layout.mjs checks every name used
//    here against the layout a build prints.
//  - Futures: a JavaScript promise per future; wgpuInstanceWaitAny is the one suspending
//    import (JSPI: WebAssembly.Suspending); callbacks are queued as events that the C side
//    pulls (tzw_next_event) and calls itself: this file never calls into wasm.
//  - Mapped ranges are copied into wasm memory that C allocated.
//
// Usage (web/wasm_run.mjs does this):
//   const gpu = new WgpuImports(navigator.gpu);          // navigator.gpu may be undefined
//   imports.wgpu = gpu.imports;                          // beside wasi_snapshot_preview1
//   const inst = await WebAssembly.instantiate(module, imports);
//   gpu.setMemory(inst.exports.memory);
//   await WebAssembly.promising(inst.exports._start)(); // waits suspend only inside promising

const te = new TextEncoder();
const td = new TextDecoder();

export class WgpuImports {
  // gpu: navigator.gpu (undefined / null: none, --backend webgpu then says so); getMemory
  // (optional): () => the instance's memory, for callers that create the imports before the
  // instance (web/imports.js); otherwise call setMemory() once the instance exists.
  constructor(gpu, getMemory) {
    this.gpu = gpu;
    this.getMemory = getMemory || null;
    this._memory = null;
    this.L = null; // the layout from tzw_init
    this.objs = [undefined]; // handle -> object (0: NULL)
    this.freeHandles = [];
    this.futures = new Map(); // id -> future record
    this.nextFuture = 1;
    this.events = []; // queued callbacks for tzw_next_event
    this.devices = new Map(); // device handle -> {lost, error} callback infos
    this.imports = this.makeImports();
  }

  setMemory(memory) {
    this._memory = memory;
  }
  get memory() {
    return this._memory || (this.getMemory ? this.getMemory() : null);
  }

  // ---- memory access through the layout ----
  dv() {
    if (!this._dv || this._dv.buffer !== this.memory.buffer) this._dv = new DataView(this.memory.buffer);
    return this._dv;
  }
  bytes(p, n) {
    return new Uint8Array(this.memory.buffer, p >>> 0, n >>> 0);
  }
  f(s, m) {
    const x = this.L.fields[s] && this.L.fields[s][m];
    if (!x) throw new Error(`wgpu_imports: the layout has no ${s}.${m}`);
    return x;
  }
  size(s) {
    const n = this.L.sizes[s];
    if (n === undefined) throw new Error(`wgpu_imports: the layout has no size of ${s}`);
    return n;
  }
  c(name) {
    const v = this.L.consts[name];
    if (v === undefined) throw new Error(`wgpu_imports: the layout has no constant ${name}`);
    return v; // BigInt
  }
  cn(name) {
    return Number(this.c(name));
  }
  addr(p, s, m) {
    return (p >>> 0) + this.f(s, m).off;
  }
  // a member: 4-byte ones as unsigned Numbers, 8-byte integers as BigInt, floats as Numbers
  rd(p, s, m) {
    const x = this.f(s, m);
    const a = (p >>> 0) + x.off;
    if (x.kind === 'f') return x.size === 8 ? this.dv().getFloat64(a, true) : this.dv().getFloat32(a, true);
    if (x.size === 4) return this.dv().getUint32(a, true);
    if (x.size === 8) return this.dv().getBigUint64(a, true);
    if (x.size === 2) return this.dv().getUint16(a, true);
    if (x.size === 1) return this.dv().getUint8(a);
    throw new Error(`wgpu_imports: ${s}.${m} has size ${x.size}: not a scalar`);
  }
  rdn(p, s, m) {
    return Number(this.rd(p, s, m));
  }
  wr(p, s, m, v) {
    const x = this.f(s, m);
    const a = (p >>> 0) + x.off;
    if (x.kind === 'f') {
      if (x.size === 8) this.dv().setFloat64(a, Number(v), true);
      else this.dv().setFloat32(a, Number(v), true);
    } else if (x.size === 4) this.dv().setUint32(a, Number(v) >>> 0, true);
    else if (x.size === 8) this.dv().setBigUint64(a, BigInt(v), true);
    else throw new Error(`wgpu_imports: cannot write ${s}.${m} (size ${x.size})`);
  }
  // a WGPUStringView at address p (undefined for a NULL data pointer)
  sv(p) {
    const data = this.rdn(p, 'WGPUStringView', 'data');
    let len = this.rd(p, 'WGPUStringView', 'length');
    if (!data) return undefined;
    if (BigInt(len) === this.c('WGPU_STRLEN')) {
      const u8 = new Uint8Array(this.memory.buffer);
      let e = data;
      while (u8[e]) e++;
      len = e - data;
    }
    return td.decode(this.bytes(data, Number(len)).slice());
  }
  cstr(p, n) {
    return td.decode(this.bytes(p, n).slice());
  }
  // write s into buf[0..cap) nul-terminated (cap > 0); returns its full UTF-8 length
  putStr(s, buf, cap) {
    const b = te.encode(s || '');
    if (buf && cap) {
      const n = Math.min(b.length, cap - 1);
      this.bytes(buf, cap).set(b.subarray(0, n));
      new Uint8Array(this.memory.buffer)[(buf >>> 0) + n] = 0;
    }
    return b.length;
  }

  // ---- handles ----
  put(o) {
    const h = this.freeHandles.length ? this.freeHandles.pop() : this.objs.length;
    this.objs[h] = o;
    return h;
  }
  get(h) {
    h >>>= 0;
    if (!h) return undefined;
    const o = this.objs[h];
    if (o === undefined) throw new Error(`wgpu_imports: handle ${h} is not live`);
    return o;
  }
  drop(h) {
    h >>>= 0;
    if (h && this.objs[h] !== undefined) {
      this.objs[h] = undefined;
      this.devices.delete(h);
      this.freeHandles.push(h);
    }
  }

  // ---- futures and events ----
  // A future for `promise`; `convert` turns its value into the event's handle (or throws);
  // ci: the address of the C callback info struct `ciType`.
  future(promise, kind, ci, ciType, convert) {
    const id = this.nextFuture++;
    const rec = {
      id, kind, done: false,
      mode: this.rdn(ci, ciType, 'mode'),
      fn: this.rdn(ci, ciType, 'callback'),
      u1: this.rdn(ci, ciType, 'userdata1'),
      u2: this.rdn(ci, ciType, 'userdata2'),
      ok: 0, handle: 0, msg: '',
    };
    rec.promise = Promise.resolve(promise).then(
      (v) => {
        try {
          rec.handle = convert ? convert(v) : 0;
          rec.ok = 1;
        } catch (e) {
          rec.msg = String(e && e.message ? e.message : e);
        }
      },
      (e) => {
        rec.msg = String(e && e.message ? e.message : e);
      }).then(() => {
      rec.done = true;
    });
    this.futures.set(id, rec);
    return id;
  }
  deliver(rec) {
    this.futures.delete(rec.id);
    this.events.push({ kind: rec.kind, ok: rec.ok, code: 0, handle: rec.handle, device: 0,
      fn: rec.fn, u1: rec.u1, u2: rec.u2, msg: rec.msg });
  }

  // ---- device errors ----
  watchDevice(h, dev, lostInfo, errInfo) {
    this.devices.set(h, { lostInfo, errInfo });
    dev.addEventListener('uncapturederror', (ev) => {
      const e = ev.error;
      const code = (typeof GPUValidationError !== 'undefined' && e instanceof GPUValidationError) ? 'TZW_ERR_VALIDATION'
        : (typeof GPUOutOfMemoryError !== 'undefined' && e instanceof GPUOutOfMemoryError) ? 'TZW_ERR_OOM'
        : (typeof GPUInternalError !== 'undefined' && e instanceof GPUInternalError) ? 'TZW_ERR_INTERNAL'
        : 'TZW_ERR_UNKNOWN';
      if (errInfo.fn)
        this.events.push({ kind: this.cn('TZW_EV_ERROR'), ok: 0, code: this.cn(code), handle: 0, device: h,
          fn: errInfo.fn, u1: errInfo.u1, u2: errInfo.u2, msg: String(e && e.message) });
      ev.preventDefault();
    });
    dev.lost.then((info) => {
      if (lostInfo.fn)
        this.events.push({ kind: this.cn('TZW_EV_LOST'), ok: 0,
          code: this.cn(info.reason === 'destroyed' ? 'TZW_LOST_DESTROYED' : 'TZW_LOST_UNKNOWN'), handle: 0,
          device: h, fn: lostInfo.fn, u1: lostInfo.u1, u2: lostInfo.u2, msg: String(info.message || '') });
    });
  }

  // ---- descriptors ----
  limitsFrom(p, supported) {
    const out = {};
    for (const [name, x] of Object.entries(this.L.fields.WGPULimits)) {
      if (name === 'nextInChain') continue;
      const v = this.rd(p, 'WGPULimits', name);
      const undef = x.size === 8 ? this.c('WGPU_LIMIT_U64_UNDEFINED') : this.c('WGPU_LIMIT_U32_UNDEFINED');
      if (BigInt(v) === undef || !(name in supported)) continue;
      out[name] = Number(v);
    }
    return out;
  }
  writeLimits(p, lim) {
    for (const [name, x] of Object.entries(this.L.fields.WGPULimits)) {
      if (name === 'nextInChain') continue;
      const v = lim[name];
      const undef = x.size === 8 ? this.c('WGPU_LIMIT_U64_UNDEFINED') : this.c('WGPU_LIMIT_U32_UNDEFINED');
      this.wr(p, 'WGPULimits', name, v === undefined ? undef : BigInt(v));
    }
  }
  computeDesc(p) {
    const layout = this.rdn(p, 'WGPUComputePipelineDescriptor', 'layout');
    const cs = this.addr(p, 'WGPUComputePipelineDescriptor', 'compute');
    const n = this.rdn(cs, 'WGPUComputeState', 'constantCount');
    const arr = this.rdn(cs, 'WGPUComputeState', 'constants');
    const constants = {};
    for (let i = 0; i < n; i++) {
      const e = arr + i * this.size('WGPUConstantEntry');
      constants[this.sv(this.addr(e, 'WGPUConstantEntry', 'key'))] = this.rd(e, 'WGPUConstantEntry', 'value');
    }
    const d = {
      layout: layout ? this.get(layout) : 'auto',
      compute: {
        module: this.get(this.rdn(cs, 'WGPUComputeState', 'module')),
        entryPoint: this.sv(this.addr(cs, 'WGPUComputeState', 'entryPoint')),
      },
    };
    if (n) d.compute.constants = constants;
    const label = this.sv(this.addr(p, 'WGPUComputePipelineDescriptor', 'label'));
    if (label) d.label = label;
    return d;
  }

  // ---- the imports ----
  makeImports() {
    const self = this;
    const n64 = (x) => Number(x); // BigInt arguments (uint64_t) to Number
    const im = {
      // -- the tzw_* imports behind wgpu_wasm.c's wrappers --
      tzw_init(json, len, why, cap) {
        const raw = JSON.parse(self.cstr(json, len));
        const fields = {};
        for (const [s, m, off, size, kind] of raw.members) (fields[s] = fields[s] || {})[m] = { off, size, kind };
        const consts = {};
        for (const [k, v] of Object.entries(raw.consts)) consts[k] = BigInt(v);
        self.L = { fields, sizes: raw.sizes, consts };
        if (!self.gpu) {
          self.putStr('this page has no navigator.gpu (WebGPU off or unsupported: use --backend cpu)', why, cap);
          return 0;
        }
        // webgpu.h's usage and map-mode bits are WebGPU's: checked, not assumed
        const pairs = [['WGPUBufferUsage_MapRead', GPUBufferUsage.MAP_READ], ['WGPUBufferUsage_MapWrite', GPUBufferUsage.MAP_WRITE],
          ['WGPUBufferUsage_CopySrc', GPUBufferUsage.COPY_SRC], ['WGPUBufferUsage_CopyDst', GPUBufferUsage.COPY_DST],
          ['WGPUBufferUsage_Uniform', GPUBufferUsage.UNIFORM], ['WGPUBufferUsage_Storage', GPUBufferUsage.STORAGE],
          ['WGPUBufferUsage_QueryResolve', GPUBufferUsage.QUERY_RESOLVE], ['WGPUMapMode_Read', GPUMapMode.READ]];
        for (const [k, v] of pairs)
          if (self.cn(k) !== v) {
            self.putStr(`${k} is ${self.cn(k)} in webgpu_api.h but ${v} in this browser`, why, cap);
            return 0;
          }
        return 1;
      },
      tzw_instance_request_adapter(inst, opts, ci) {
        const o = {};
        if (opts) {
          const pp = self.rdn(opts, 'WGPURequestAdapterOptions', 'powerPreference');
          if (pp === self.cn('WGPUPowerPreference_HighPerformance')) o.powerPreference = 'high-performance';
          if (self.rdn(opts, 'WGPURequestAdapterOptions', 'forceFallbackAdapter')) o.forceFallbackAdapter = true;
        }
        return self.future(self.gpu.requestAdapter(o), self.cn('TZW_EV_ADAPTER'), ci, 'WGPURequestAdapterCallbackInfo',
          (a) => {
            if (!a) throw new Error('navigator.gpu.requestAdapter() gave no adapter (WebGPU blocked or no GPU; Chromium: --enable-unsafe-webgpu)');
            return self.put(a);
          });
      },
      tzw_adapter_request_device(ah, d, feats, flen, ci) {
        const a = self.get(ah);
        const desc = { requiredFeatures: flen ? self.cstr(feats, flen).split(',') : [] };
        const lim = self.rdn(d, 'WGPUDeviceDescriptor', 'requiredLimits');
        if (lim) desc.requiredLimits = self.limitsFrom(lim, a.limits);
        const label = self.sv(self.addr(d, 'WGPUDeviceDescriptor', 'label'));
        if (label) desc.label = label;
        const li = self.addr(d, 'WGPUDeviceDescriptor', 'deviceLostCallbackInfo'), ei = self.addr(d, 'WGPUDeviceDescriptor', 'uncapturedErrorCallbackInfo');
        const lostInfo = { fn: self.rdn(li, 'WGPUDeviceLostCallbackInfo', 'callback'),
          u1: self.rdn(li, 'WGPUDeviceLostCallbackInfo', 'userdata1'), u2: self.rdn(li, 'WGPUDeviceLostCallbackInfo', 'userdata2') };
        const errInfo = { fn: self.rdn(ei, 'WGPUUncapturedErrorCallbackInfo', 'callback'),
          u1: self.rdn(ei, 'WGPUUncapturedErrorCallbackInfo', 'userdata1'),
          u2: self.rdn(ei, 'WGPUUncapturedErrorCallbackInfo', 'userdata2') };
        return self.future(a.requestDevice(desc), self.cn('TZW_EV_DEVICE'), ci, 'WGPURequestDeviceCallbackInfo', (dev) => {
          const h = self.put(dev);
          self.watchDevice(h, dev, lostInfo, errInfo);
          return h;
        });
      },
      tzw_device_create_compute_pipeline_async(dh, desc, ci) {
        return self.future(self.get(dh).createComputePipelineAsync(self.computeDesc(desc)), self.cn('TZW_EV_PIPELINE'), ci,
          'WGPUCreateComputePipelineAsyncCallbackInfo', (p) => self.put(p));
      },
      tzw_buffer_map_async(bh, mode, off, size, ci) {
        return self.future(self.get(bh).mapAsync(mode >>> 0, off >>> 0, size >>> 0), self.cn('TZW_EV_STATUS'), ci,
          'WGPUBufferMapCallbackInfo', null);
      },
      tzw_queue_on_submitted_work_done(qh, ci) {
        return self.future(self.get(qh).onSubmittedWorkDone(), self.cn('TZW_EV_STATUS'), ci, 'WGPUQueueWorkDoneCallbackInfo', null);
      },
      // suspending (see the Suspending wrapper below): 1 when any future completed, 0 on timeout
      tzw_wait_any(inst, n, p, timeoutNs) {
        const stride = self.size('WGPUFutureWaitInfo');
        const items = [];
        for (let i = 0; i < (n >>> 0); i++) {
          const w = (p >>> 0) + i * stride;
          const id = Number(self.rd(self.addr(w, 'WGPUFutureWaitInfo', 'future'), 'WGPUFuture', 'id'));
          items.push({ w, id });
        }
        const mark = () => {
          let any = 0;
          for (const it of items) {
            const rec = self.futures.get(it.id);
            // an id no longer in the table was delivered before: it is complete
            const done = rec ? rec.done : it.id > 0 && it.id < self.nextFuture;
            if (!done) continue;
            self.wr(it.w, 'WGPUFutureWaitInfo', 'completed', 1);
            if (rec) self.deliver(rec);
            any = 1;
          }
          return any;
        };
        if (mark()) return 1;
        const ms = Number(BigInt(timeoutNs) / 1000000n);
        if (ms <= 0) return 0;
        const pending = items.map((it) => self.futures.get(it.id)).filter(Boolean).map((r) => r.promise);
        let timer;
        const timeout = new Promise((res) => { timer = setTimeout(res, ms); });
        return Promise.race([...pending, timeout]).then(() => {
          clearTimeout(timer);
          return mark();
        });
      },
      tzw_process_events(inst) {
        for (const rec of [...self.futures.values()])
          if (rec.done && rec.mode !== self.cn('WGPUCallbackMode_WaitAnyOnly')) self.deliver(rec);
      },
      tzw_next_event(ev) {
        const e = self.events.shift();
        if (!e) return 0;
        self.wr(ev, 'tzw_event', 'kind', e.kind);
        self.wr(ev, 'tzw_event', 'ok', e.ok);
        self.wr(ev, 'tzw_event', 'code', e.code);
        self.wr(ev, 'tzw_event', 'handle', e.handle);
        self.wr(ev, 'tzw_event', 'device', e.device);
        self.wr(ev, 'tzw_event', 'fn', e.fn);
        self.wr(ev, 'tzw_event', 'u1', e.u1);
        self.wr(ev, 'tzw_event', 'u2', e.u2);
        const cap = self.cn('TZW_MSG_CAP');
        const n = Math.min(self.putStr(e.msg, self.addr(ev, 'tzw_event', 'msg'), cap), cap - 1);
        self.wr(ev, 'tzw_event', 'msg_len', n);
        return 1;
      },
      tzw_adapter_get_info(ah, p) {
        const info = self.get(ah).info || {};
        self.wr(p, 'WGPUAdapterInfo', 'subgroupMinSize', info.subgroupMinSize || 0);
        self.wr(p, 'WGPUAdapterInfo', 'subgroupMaxSize', info.subgroupMaxSize || 0);
        self.wr(p, 'WGPUAdapterInfo', 'vendorID', 0); // not exposed to pages
        self.wr(p, 'WGPUAdapterInfo', 'deviceID', 0);
        return 1;
      },
      tzw_adapter_info_string(ah, k, buf, cap) {
        const info = self.get(ah).info || {};
        // pages often get no device name: "vendor architecture" then ("google swiftshader")
        const dev = info.device || [info.vendor, info.architecture].filter(Boolean).join(' ');
        const s = [info.vendor, info.architecture, dev, info.description][k] || '';
        return self.putStr(s, buf, cap);
      },
      tzw_get_limits(h, isDev, p) {
        self.writeLimits(p, self.get(h).limits);
        return 1;
      },
      tzw_has_feature(h, isDev, name, len) {
        return self.get(h).features.has(self.cstr(name, len)) ? 1 : 0;
      },
      tzw_buffer_read_mapped(bh, off, size, dst) {
        try {
          const r = self.get(bh).getMappedRange(off >>> 0, size >>> 0);
          self.bytes(dst, size).set(new Uint8Array(r));
          return 1;
        } catch (e) {
          return 0;
        }
      },
      tzw_buffer_unmap(bh) {
        self.get(bh).unmap();
      },

      // -- webgpu.h functions imported directly (TZW_DIRECT in wgpu_wasm.c) --
      wgpuCreateInstance(desc) {
        return self.put({ instance: true });
      },
      wgpuInstanceRelease: (h) => self.drop(h),
      wgpuAdapterRelease: (h) => self.drop(h),
      wgpuDeviceGetQueue: (h) => self.put(self.get(h).queue),
      wgpuDeviceCreateBuffer(dh, p) {
        const d = { size: self.rdn(p, 'WGPUBufferDescriptor', 'size'), usage: self.rdn(p, 'WGPUBufferDescriptor', 'usage'),
          mappedAtCreation: !!self.rdn(p, 'WGPUBufferDescriptor', 'mappedAtCreation') };
        const label = self.sv(self.addr(p, 'WGPUBufferDescriptor', 'label'));
        if (label) d.label = label;
        return self.put(self.get(dh).createBuffer(d));
      },
      wgpuDeviceCreateShaderModule(dh, p) {
        let ch = self.rdn(p, 'WGPUShaderModuleDescriptor', 'nextInChain');
        let code;
        for (; ch; ch = self.rdn(ch, 'WGPUChainedStruct', 'next'))
          if (self.rd(ch, 'WGPUChainedStruct', 'sType') === self.cn('WGPUSType_ShaderSourceWGSL'))
            code = self.sv(self.addr(ch, 'WGPUShaderSourceWGSL', 'code'));
        if (code === undefined) throw new Error('wgpuDeviceCreateShaderModule: no WGSL source chained');
        const d = { code };
        const label = self.sv(self.addr(p, 'WGPUShaderModuleDescriptor', 'label'));
        if (label) d.label = label;
        return self.put(self.get(dh).createShaderModule(d));
      },
      wgpuDeviceCreateComputePipeline: (dh, p) => self.put(self.get(dh).createComputePipeline(self.computeDesc(p))),
      wgpuDeviceCreateBindGroup(dh, p) {
        const n = self.rdn(p, 'WGPUBindGroupDescriptor', 'entryCount'), arr = self.rdn(p, 'WGPUBindGroupDescriptor', 'entries');
        const entries = [];
        for (let i = 0; i < n; i++) {
          const e = arr + i * self.size('WGPUBindGroupEntry');
          const buf = self.rdn(e, 'WGPUBindGroupEntry', 'buffer');
          if (!buf) throw new Error('wgpuDeviceCreateBindGroup: only buffer bindings are bound by tezgah');
          const r = { buffer: self.get(buf), offset: self.rdn(e, 'WGPUBindGroupEntry', 'offset') };
          const sz = self.rd(e, 'WGPUBindGroupEntry', 'size');
          if (sz !== self.c('WGPU_WHOLE_SIZE')) r.size = Number(sz);
          entries.push({ binding: self.rdn(e, 'WGPUBindGroupEntry', 'binding'), resource: r });
        }
        const d = { layout: self.get(self.rdn(p, 'WGPUBindGroupDescriptor', 'layout')), entries };
        const label = self.sv(self.addr(p, 'WGPUBindGroupDescriptor', 'label'));
        if (label) d.label = label;
        return self.put(self.get(dh).createBindGroup(d));
      },
      wgpuDeviceCreateCommandEncoder(dh, p) {
        const d = {};
        const label = p ? self.sv(self.addr(p, 'WGPUCommandEncoderDescriptor', 'label')) : undefined;
        if (label) d.label = label;
        return self.put(self.get(dh).createCommandEncoder(d));
      },
      wgpuDeviceCreateQuerySet(dh, p) {
        if (self.rdn(p, 'WGPUQuerySetDescriptor', 'type') !== self.cn('WGPUQueryType_Timestamp'))
          throw new Error('wgpuDeviceCreateQuerySet: only timestamp query sets are used by tezgah');
        return self.put(self.get(dh).createQuerySet({ type: 'timestamp', count: self.rdn(p, 'WGPUQuerySetDescriptor', 'count') }));
      },
      wgpuDeviceDestroy: (h) => self.get(h).destroy(),
      wgpuDeviceRelease: (h) => self.drop(h),
      wgpuBufferDestroy: (h) => self.get(h).destroy(),
      wgpuBufferRelease: (h) => self.drop(h),
      wgpuShaderModuleRelease: (h) => self.drop(h),
      wgpuComputePipelineGetBindGroupLayout: (h, i) => self.put(self.get(h).getBindGroupLayout(i >>> 0)),
      wgpuComputePipelineRelease: (h) => self.drop(h),
      wgpuBindGroupLayoutRelease: (h) => self.drop(h),
      wgpuBindGroupRelease: (h) => self.drop(h),
      wgpuCommandEncoderBeginComputePass(eh, p) {
        const d = {};
        if (p) {
          const label = self.sv(self.addr(p, 'WGPUComputePassDescriptor', 'label'));
          if (label) d.label = label;
          const tw = self.rdn(p, 'WGPUComputePassDescriptor', 'timestampWrites');
          if (tw)
            d.timestampWrites = { querySet: self.get(self.rdn(tw, 'WGPUPassTimestampWrites', 'querySet')),
              beginningOfPassWriteIndex: self.rdn(tw, 'WGPUPassTimestampWrites', 'beginningOfPassWriteIndex'),
              endOfPassWriteIndex: self.rdn(tw, 'WGPUPassTimestampWrites', 'endOfPassWriteIndex') };
        }
        return self.put(self.get(eh).beginComputePass(d));
      },
      wgpuCommandEncoderCopyBufferToBuffer: (eh, src, so, dst, dO, size) =>
        self.get(eh).copyBufferToBuffer(self.get(src), n64(so), self.get(dst), n64(dO), n64(size)),
      wgpuCommandEncoderResolveQuerySet: (eh, qs, first, count, dst, off) =>
        self.get(eh).resolveQuerySet(self.get(qs), first >>> 0, count >>> 0, self.get(dst), n64(off)),
      wgpuCommandEncoderFinish: (eh, p) => self.put(self.get(eh).finish()),
      wgpuCommandEncoderRelease: (h) => self.drop(h),
      wgpuComputePassEncoderSetPipeline: (ph, pipe) => self.get(ph).setPipeline(self.get(pipe)),
      wgpuComputePassEncoderSetBindGroup(ph, i, bg, n, offs) {
        const o = (n >>> 0) ? Array.from(new Uint32Array(self.memory.buffer, offs >>> 0, n >>> 0)) : [];
        self.get(ph).setBindGroup(i >>> 0, self.get(bg), o);
      },
      wgpuComputePassEncoderDispatchWorkgroups: (ph, x, y, z) => self.get(ph).dispatchWorkgroups(x >>> 0, y >>> 0, z >>> 0),
      wgpuComputePassEncoderEnd: (ph) => self.get(ph).end(),
      wgpuComputePassEncoderRelease: (h) => self.drop(h),
      wgpuCommandBufferRelease: (h) => self.drop(h),
      wgpuQueueSubmit(qh, n, p) {
        const step = self.size('WGPUCommandBuffer');
        const list = [];
        for (let i = 0; i < (n >>> 0); i++) list.push(self.get(self.dv().getUint32((p >>> 0) + i * step, true)));
        self.get(qh).submit(list);
      },
      wgpuQueueWriteBuffer: (qh, bh, off, data, size) =>
        self.get(qh).writeBuffer(self.get(bh), n64(off), self.memory.buffer, data >>> 0, size >>> 0),
      wgpuQueueRelease: (h) => self.drop(h),
      wgpuQuerySetDestroy: (h) => self.get(h).destroy(),
      wgpuQuerySetRelease: (h) => self.drop(h),
    };
    // the one blocking call: suspends the wasm stack until a promise settles (JSPI)
    // globalThis.tzwLogPipelines (tests/wasm/run_browser.mjs --log-pipelines): a console line per
    // compute pipeline created and per wait that took over 100 ms (where compile time shows up)
    if (globalThis.tzwLogPipelines) {
      const t0 = performance.now(), create = im.wgpuDeviceCreateComputePipeline, wait = im.tzw_wait_any;
      let npipe = 0;
      im.wgpuDeviceCreateComputePipeline = (dh, p) => {
        const label = self.sv(self.addr(p, 'WGPUComputePipelineDescriptor', 'label'));
        const i = ++npipe, t = performance.now();
        console.log(`tzw: pipeline ${i} ${label} at ${(t - t0).toFixed(0)} ms`);
        const h = create(dh, p);
        // the same descriptor asynchronously: it settles once the browser has compiled it (the
        // GPU process takes creations in order, and Dawn shares identical pipelines), which
        // dates each pipeline's compile
        if (globalThis.tzwLogPipelines === 'async')
          self.get(dh).createComputePipelineAsync(self.computeDesc(p)).then(() => console.log(
            `tzw: compiled ${i} ${label} at ${(performance.now() - t0).toFixed(0)} ms`), () => {});
        return h;
      };
      im.tzw_wait_any = (...a) => {
        const t = performance.now(), r = wait(...a);
        const log = () => performance.now() - t > 100 &&
          console.log(`tzw: wait ${(performance.now() - t).toFixed(0)} ms (after ${npipe} pipelines) at ${(performance.now() - t0).toFixed(0)} ms`);
        if (r && typeof r.then === 'function') return r.then((v) => (log(), v));
        log();
        return r;
      };
    }
    if (typeof WebAssembly.Suspending === 'function') im.tzw_wait_any = new WebAssembly.Suspending(im.tzw_wait_any);
    return im;
  }
}

// The layout names a source text (this file's) reads, found statically for
// tests/wasm/check_layout.mjs: every pair of adjacent string literals 'Struct', 'member' (each
// rd / rdn / wr / addr call names its struct and member literally), every size() literal,
// every constant-like literal ('WGPU..._...', 'WGPU_...', 'TZW_...'), and for each callback-info
// struct passed to future() (after its `ci` argument) the four members future() reads.
export function layoutNamesUsed(source) {
  const members = new Set(), sizes = new Set(), consts = new Set();
  for (const m of source.matchAll(/'(WGPU[A-Za-z0-9]+|tzw_event)',\s*'(\w+)'/g)) members.add(`${m[1]}.${m[2]}`);
  for (const m of source.matchAll(/\bsize\('(\w+)'\)/g)) sizes.add(m[1]);
  for (const m of source.matchAll(/'((?:WGPU[A-Za-z0-9]*_\w+)|(?:TZW_\w+))'/g)) consts.add(m[1]);
  for (const m of source.matchAll(/\bci,\s*'(WGPU\w+CallbackInfo)'/g))
    for (const k of ['mode', 'callback', 'userdata1', 'userdata2']) members.add(`${m[1]}.${k}`);
  return { members, sizes, consts };
}
