#!/usr/bin/env python3
"""Write the C ABI facts of a Dawn build's webgpu.h, derived from Dawn's own dawn.json.

Usage: dawn_abi_facts.py DAWN_JSON "HEADER LINE" > facts.txt
   or: dawn_abi_facts.py --git MIRROR COMMIT "HEADER LINE" > facts.txt
       (reads src/dawn/dawn.json at COMMIT with `git -C MIRROR show`)

webgpu.h is not stored in Dawn's repository: Dawn's generator (generator/dawn_json_generator.py
and generator/templates/api.h) renders it from src/dawn/dawn.json. This script follows the
rules of that generator as they stand in 2025-2026 so its output is checkable against the json:
  - the header's tag set is {dawn, emscripten, native, deprecated} (an item tagged only
    art_experimental is left out);
  - an enum value tagged dawn gets 0x0005_0000 added, emscripten 0x0004_0000, native (alone)
    0x0001_0000; bitmask values are taken as written;
  - an "extensible" struct starts with `nextInChain` (a pointer), a "chained" one with
    `chain` (WGPUChainedStruct, 16 bytes); a "callback info" struct is {nextInChain, its listed
    members (mode where listed, callback), userdata1, userdata2};
  - a member or argument with an annotation (`*`, `const*`, `const*const*`) is a pointer;
    `bool` is WGPUBool (uint32_t); an enum is 4 bytes; a bitmask is WGPUFlags (uint64_t); an
    object is a pointer; a callback or function pointer is a pointer;
  - every object has AddRef and Release; a struct that is an output ("out" extensible or
    chained, or "out": true) with a pointer or string-view member has FreeMembers.
Layout: x86-64 System V (LP64): natural alignment, struct size rounded up to its alignment.
The output's format is that of ../shared/webgpu/dawn_abi_facts.txt (made by another tool for
the bun-webgpu build); tests/test_webgpu_abi.c reads either. Checked against it: run on
dawn.json at 7adb0440d5, every line of the shared file is reproduced (scripts/dawn_abi_facts_check.sh).
"""
import json
import subprocess
import sys

ENABLED = {"dawn", "emscripten", "native", "deprecated"}


def enabled(item):
    tags = item.get("tags")
    if tags is None:
        return True
    stripped = [t for t in tags if t != "art_experimental"]
    if not stripped:
        return not tags  # only art_experimental: off
    return any(t in ENABLED for t in stripped)


def chunks(name):
    return name.split(" ")


def camel(name):  # CamelCase
    return "".join(c[0].upper() + c[1:] for c in chunks(name))


def lower_camel(name):  # camelCase
    c = chunks(name)
    return c[0] + "".join(x[0].upper() + x[1:] for x in c[1:])


NATIVE_SIZES = {
    "bool": 4, "char": 1, "double": 8, "float": 4, "int": 4, "int32_t": 4, "size_t": 8,
    "uint16_t": 2, "uint32_t": 4, "uint64_t": 8, "uint8_t": 1, "void *": 8, "void const *": 8,
    "std::byte": 1,
}


class Api:
    def __init__(self, d):
        self.d = {k: v for k, v in d.items() if not k.startswith("_") and enabled(v)}
        self.layouts = {}

    def cat(self, t):
        return self.d[t]["category"]

    def ctype(self, t):
        if t == "bool":
            return "WGPUBool"
        if self.cat(t) == "native":
            return t
        return "WGPU" + camel(t)

    # ---- layout ----
    def members(self, t):
        v = self.d[t]
        out = []
        if v["category"] == "callback info":
            out.append(("next in chain", None, "*"))
            for m in v["members"]:  # "mode" is listed where the struct has one
                if enabled(m):
                    out.append((m["name"], m["type"], m.get("annotation", "value")))
            out.append(("userdata1", "void *", "value"))
            out.append(("userdata2", "void *", "value"))
            return out
        if v.get("extensible"):
            out.append(("next in chain", None, "*"))
        if v.get("chained"):
            out.append(("chain", "chained struct", "value"))
        for m in v.get("members", []):
            if enabled(m):
                out.append((m["name"], m["type"], m.get("annotation", "value")))
        return out

    def size_align(self, t, annotation="value"):
        if annotation != "value" or t is None:
            return 8, 8
        if t == "chained struct":
            return 16, 8
        c = self.cat(t)
        if c == "native":
            s = NATIVE_SIZES[t]
            return s, s
        if c == "enum":
            return 4, 4
        if c == "bitmask":
            return 8, 8
        if c in ("object", "callback function", "function pointer"):
            return 8, 8
        if c in ("structure", "callback info"):
            lay = self.layout(t)
            return lay["size"], lay["align"]
        raise ValueError(f"no layout rule for {t} ({c})")

    def layout(self, t):
        if t in self.layouts:
            return self.layouts[t]
        off, align, rows = 0, 1, []
        for name, mt, ann in self.members(t):
            s, a = self.size_align(mt, ann)
            off = (off + a - 1) // a * a
            rows.append((lower_camel(name), off, s))
            off += s
            align = max(align, a)
        size = (off + align - 1) // align * align
        lay = {"size": size, "align": align, "members": rows}
        self.layouts[t] = lay
        return lay

    # ---- text of declarations ----
    def decorate(self, t, ann):
        s = self.ctype(t)
        if ann == "*":
            return s + " *"
        if ann == "const*":
            return s + " const *"
        if ann == "const*const*":
            return "const " + s + "* const *"
        return s

    def ret(self, r):
        if r is None:
            return "void"
        if isinstance(r, str):
            return self.ctype(r)
        return self.decorate(r["type"], r.get("annotation", "value"))

    def arg(self, a, struct_kw=False):
        kw = ""
        if struct_kw and self.cat(a["type"]) == "structure" and a["type"] != "string view":
            kw = "struct "
        return kw + self.decorate(a["type"], a.get("annotation", "value")) + " " + lower_camel(a["name"])

    def output_struct(self, v):
        return v.get("chained") == "out" or v.get("extensible") == "out" or v.get("out", False)

    def functions(self):
        fns = []
        for t, v in self.d.items():
            c = v["category"]
            if c == "function":
                args = [self.arg(a) for a in v.get("args", []) if enabled(a)]
                fns.append((self.ret(v.get("returns")), "wgpu" + camel(t), args))
            elif c == "object":
                me = self.ctype(t) + " " + lower_camel(t)
                for m in v.get("methods", []) + [{"name": "add ref"}, {"name": "release"}]:
                    if not enabled(m):
                        continue
                    args = [me] + [self.arg(a) for a in m.get("args", []) if enabled(a)]
                    fns.append((self.ret(m.get("returns")), "wgpu" + camel(t) + camel(m["name"]), args))
            elif c == "structure" and self.output_struct(v):
                if any(ann != "value" or mt == "string view" for _, mt, ann in self.members(t)
                       if mt is not None and _ not in ("next in chain", "chain")):
                    fns.append(("void", "wgpu" + camel(t) + "FreeMembers", [self.ctype(t) + " value"]))
        return sorted(fns, key=lambda f: f[1])

    def callbacks(self):
        out = []
        for t, v in self.d.items():
            if v["category"] == "callback function":
                args = [self.arg(a, struct_kw=True) for a in v.get("args", []) if enabled(a)]
                args += ["void* userdata1", "void* userdata2"]
                out.append(f"typedef void (*{self.ctype(t)})({', '.join(args)});")
        return sorted(out)

    def constants(self):
        out = []
        for t, v in self.d.items():
            c = v["category"]
            if c == "enum":
                for m in v["values"]:
                    if not enabled(m):
                        continue
                    tags = m.get("tags", [])
                    p = 0
                    if "dawn" in tags:
                        p = 0x50000
                    elif "emscripten" in tags:
                        p = 0x40000
                    if p == 0 and "native" in tags:
                        p = 0x10000
                    out.append((f"WGPU{camel(t)}_{camel(m['name'])}", m["value"] + p))
            elif c == "bitmask":
                for m in v["values"]:
                    if enabled(m):
                        out.append((f"WGPU{camel(t)}_{camel(m['name'])}", m["value"]))
            elif c == "constant":
                val = {"UINT32_MAX": 0xFFFFFFFF, "UINT64_MAX": 0xFFFFFFFFFFFFFFFF,
                       "SIZE_MAX": 0xFFFFFFFFFFFFFFFF}.get(v["value"])
                if val is not None:
                    out.append(("WGPU_" + "_".join(x.upper() for x in chunks(t)), val))
        return sorted(out)


def main():
    a = sys.argv[1:]
    # --append "struct name=member:type,member:type": members a build has beyond the json's
    # (learnt from the binary when the build is newer than the newest dawn.json available)
    appends = []
    while a and a[0] == "--append":
        appends.append(a[1])
        a = a[2:]
    if a and a[0] == "--git":
        text = subprocess.check_output(["git", "-C", a[1], "show", f"{a[2]}:src/dawn/dawn.json"])
        header = a[3]
    else:
        text = open(a[0], "rb").read()
        header = a[1]
    d = json.loads(text)
    for spec in appends:
        name, mems = spec.split("=", 1)
        for m in mems.split(","):
            mn, mt = m.split(":")
            d[name]["members"].append({"name": mn, "type": mt})
    api = Api(d)
    print(header.rstrip("\n"))
    print("# Generated by scripts/dawn_abi_facts.py from dawn.json (see that script for the rules).")
    print("# x86-64 Linux, LP64. Sizes and offsets in bytes.")
    print()
    structs = sorted(t for t, v in api.d.items() if v["category"] in ("structure", "callback info"))
    names = sorted((api.ctype(t), t) for t in structs)
    for cname, t in names:
        lay = api.layout(t)
        print(f"struct {cname} size={lay['size']} align={lay['align']}")
        for m, off, s in lay["members"]:
            print(f"  {cname}.{m} offset={off} size={s}")
    print("struct WGPUChainedStruct size=16 align=8")
    print("  WGPUChainedStruct.next offset=0 size=8")
    print("  WGPUChainedStruct.sType offset=8 size=4")
    for n, v in api.constants():
        print(f"const {n} = {hex(v)}")
    print("sizeof(enum) = 4")
    print()
    print("# function signatures")
    for r, n, args in api.functions():
        print(f"{r} {n}({', '.join(args)});")
    print()
    print("# callback signatures")
    for l in api.callbacks():
        print(l)


if __name__ == "__main__":
    main()
