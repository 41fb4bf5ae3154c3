/**
 * SHA-256 (FIPS 180-4) in JavaScript, for the tree's two fixed-size inputs: a leaf 0x00 ‖ 32 bytes (one block) and a
 * node 0x01 ‖ 32 ‖ 32 bytes (two blocks). node:crypto's one-shot hash pays a fixed native call and a Buffer per
 * digest that outweigh one or two compressions of 64 bytes (about 700 ns a call against 210 ns a leaf and 340 ns a
 * node here, CPU time on Node 20); these write the digest where the caller says, so a tile's hashes are computed in
 * place. `sha256` hashes any input with the same compression (the NIST vectors' check of it).
 */
const K = Int32Array.from([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98,
  0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
  0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8,
  0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
  0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819,
  0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
  0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
  0xc67178f2,
]);
/** The message schedule (W[0..15] the block being compressed) and the chaining state. */
const W = new Int32Array(64);
const H = new Int32Array(8);

/**
 * W[0..15] expanded into the block's 64 schedule words. Each word needs the one two places before it: carried in
 * locals, as a load of the word just stored would wait on that store each time.
 */
function expand(): void {
  let x2 = W[14] as number;
  let x1 = W[15] as number;
  for (let t = 16; t < 64; t += 1) {
    const a = W[t - 15] as number;
    const s0 = ((a >>> 7) | (a << 25)) ^ ((a >>> 18) | (a << 14)) ^ (a >>> 3);
    const s1 = ((x2 >>> 17) | (x2 << 15)) ^ ((x2 >>> 19) | (x2 << 13)) ^ (x2 >>> 10);
    const x = ((W[t - 16] as number) + s0 + (W[t - 7] as number) + s1) | 0;
    W[t] = x;
    x2 = x1;
    x1 = x;
  }
}

/** H = the initial hash value, stored word by word (a TypedArray.set is a builtin call costing as much). */
function init(): void {
  H[0] = 0x6a09e667;
  H[1] = 0xbb67ae85 | 0;
  H[2] = 0x3c6ef372;
  H[3] = 0xa54ff53a | 0;
  H[4] = 0x510e527f;
  H[5] = 0x9b05688c | 0;
  H[6] = 0x1f83d9ab;
  H[7] = 0x5be0cd19;
}

/** Σ0 and Σ1 of FIPS 180-4 §4.1.2 (small enough to be inlined where the rounds call them). */
function sum0(x: number): number {
  return ((x >>> 2) | (x << 30)) ^ ((x >>> 13) | (x << 19)) ^ ((x >>> 22) | (x << 10));
}

function sum1(x: number): number {
  return ((x >>> 6) | (x << 26)) ^ ((x >>> 11) | (x << 21)) ^ ((x >>> 25) | (x << 7));
}

/**
 * H += the 64 rounds from H over the block in W[0..15]. Eight rounds a pass, each naming the state words in the
 * order that round sees them, so no round moves the eight words along; Ch as g ^ (e & (f ^ g)) and Maj as
 * (a & b) | (c & (a | b)), the same functions in fewer operations. A round waits on the e before it: the sums add
 * what is known early first and Σ1(e) last, so one addition, not four, follows it.
 */
function compress(): void {
  expand();
  let a = H[0] as number;
  let b = H[1] as number;
  let c = H[2] as number;
  let d = H[3] as number;
  let e = H[4] as number;
  let f = H[5] as number;
  let g = H[6] as number;
  let h = H[7] as number;
  for (let t = 0; t < 64; t += 8) {
    h = (h + (K[t] as number) + (W[t] as number) + (g ^ (e & (f ^ g))) + sum1(e)) | 0;
    d = (d + h) | 0;
    h = (h + (((a & b) | (c & (a | b))) + sum0(a))) | 0;
    g = (g + (K[t + 1] as number) + (W[t + 1] as number) + (f ^ (d & (e ^ f))) + sum1(d)) | 0;
    c = (c + g) | 0;
    g = (g + (((h & a) | (b & (h | a))) + sum0(h))) | 0;
    f = (f + (K[t + 2] as number) + (W[t + 2] as number) + (e ^ (c & (d ^ e))) + sum1(c)) | 0;
    b = (b + f) | 0;
    f = (f + (((g & h) | (a & (g | h))) + sum0(g))) | 0;
    e = (e + (K[t + 3] as number) + (W[t + 3] as number) + (d ^ (b & (c ^ d))) + sum1(b)) | 0;
    a = (a + e) | 0;
    e = (e + (((f & g) | (h & (f | g))) + sum0(f))) | 0;
    d = (d + (K[t + 4] as number) + (W[t + 4] as number) + (c ^ (a & (b ^ c))) + sum1(a)) | 0;
    h = (h + d) | 0;
    d = (d + (((e & f) | (g & (e | f))) + sum0(e))) | 0;
    c = (c + (K[t + 5] as number) + (W[t + 5] as number) + (b ^ (h & (a ^ b))) + sum1(h)) | 0;
    g = (g + c) | 0;
    c = (c + (((d & e) | (f & (d | e))) + sum0(d))) | 0;
    b = (b + (K[t + 6] as number) + (W[t + 6] as number) + (a ^ (g & (h ^ a))) + sum1(g)) | 0;
    f = (f + b) | 0;
    b = (b + (((c & d) | (e & (c | d))) + sum0(c))) | 0;
    a = (a + (K[t + 7] as number) + (W[t + 7] as number) + (h ^ (f & (g ^ h))) + sum1(f)) | 0;
    e = (e + a) | 0;
    a = (a + (((b & c) | (d & (b | c))) + sum0(b))) | 0;
  }
  addState(a, b, c, d, e, f, g, h);
}

/**
 * A node's second block is its right hash's last byte, the padding and the length 520: 256 possible blocks. Their
 * K + W, expanded once each when first met (64 KiB in all), spare each node one of its two schedules. The rounds
 * are compress's over that table (a loop of its own: one over either array runs slower).
 */
const LAST_KW = new Int32Array(256 * 64);
const LAST_READY = new Uint8Array(256);

function compressLast(byte: number): void {
  const at = byte * 64;
  if (LAST_READY[byte] === 0) {
    W[0] = (byte << 24) | 0x800000;
    W.fill(0, 1, 15);
    W[15] = 65 * 8;
    expand();
    for (let t = 0; t < 64; t += 1) LAST_KW[at + t] = ((K[t] as number) + (W[t] as number)) | 0;
    LAST_READY[byte] = 1;
  }
  let a = H[0] as number;
  let b = H[1] as number;
  let c = H[2] as number;
  let d = H[3] as number;
  let e = H[4] as number;
  let f = H[5] as number;
  let g = H[6] as number;
  let h = H[7] as number;
  for (let t = at; t < at + 64; t += 8) {
    h = (h + (LAST_KW[t] as number) + (g ^ (e & (f ^ g))) + sum1(e)) | 0;
    d = (d + h) | 0;
    h = (h + (((a & b) | (c & (a | b))) + sum0(a))) | 0;
    g = (g + (LAST_KW[t + 1] as number) + (f ^ (d & (e ^ f))) + sum1(d)) | 0;
    c = (c + g) | 0;
    g = (g + (((h & a) | (b & (h | a))) + sum0(h))) | 0;
    f = (f + (LAST_KW[t + 2] as number) + (e ^ (c & (d ^ e))) + sum1(c)) | 0;
    b = (b + f) | 0;
    f = (f + (((g & h) | (a & (g | h))) + sum0(g))) | 0;
    e = (e + (LAST_KW[t + 3] as number) + (d ^ (b & (c ^ d))) + sum1(b)) | 0;
    a = (a + e) | 0;
    e = (e + (((f & g) | (h & (f | g))) + sum0(f))) | 0;
    d = (d + (LAST_KW[t + 4] as number) + (c ^ (a & (b ^ c))) + sum1(a)) | 0;
    h = (h + d) | 0;
    d = (d + (((e & f) | (g & (e | f))) + sum0(e))) | 0;
    c = (c + (LAST_KW[t + 5] as number) + (b ^ (h & (a ^ b))) + sum1(h)) | 0;
    g = (g + c) | 0;
    c = (c + (((d & e) | (f & (d | e))) + sum0(d))) | 0;
    b = (b + (LAST_KW[t + 6] as number) + (a ^ (g & (h ^ a))) + sum1(g)) | 0;
    f = (f + b) | 0;
    b = (b + (((c & d) | (e & (c | d))) + sum0(c))) | 0;
    a = (a + (LAST_KW[t + 7] as number) + (h ^ (f & (g ^ h))) + sum1(f)) | 0;
    e = (e + a) | 0;
    a = (a + (((b & c) | (d & (b | c))) + sum0(b))) | 0;
  }
  addState(a, b, c, d, e, f, g, h);
}

function addState(a: number, b: number, c: number, d: number, e: number, f: number, g: number, h: number): void {
  H[0] = ((H[0] as number) + a) | 0;
  H[1] = ((H[1] as number) + b) | 0;
  H[2] = ((H[2] as number) + c) | 0;
  H[3] = ((H[3] as number) + d) | 0;
  H[4] = ((H[4] as number) + e) | 0;
  H[5] = ((H[5] as number) + f) | 0;
  H[6] = ((H[6] as number) + g) | 0;
  H[7] = ((H[7] as number) + h) | 0;
}

/** The big-endian word of `src` at byte `i`. */
function word(src: Uint8Array, i: number): number {
  return (
    ((src[i] as number) << 24) | ((src[i + 1] as number) << 16) | ((src[i + 2] as number) << 8) | (src[i + 3] as number)
  );
}

/** Writes 32 bytes at `src[from…]` shifted right by one byte behind `first` into W[0..8], the 33rd byte into W[8]. */
function loadShifted(first: number, src: Uint8Array, from: number): void {
  W[0] = (first << 24) | ((src[from] as number) << 16) | ((src[from + 1] as number) << 8) | (src[from + 2] as number);
  for (let i = 1; i < 8; i += 1) W[i] = word(src, from + 4 * i - 1);
  W[8] = (src[from + 31] as number) << 24;
}

function digestInto(out: Uint8Array, at: number): void {
  for (let i = 0; i < 8; i += 1) {
    const v = H[i] as number;
    const o = at + 4 * i;
    out[o] = v >>> 24;
    out[o + 1] = v >>> 16;
    out[o + 2] = v >>> 8;
    out[o + 3] = v;
  }
}

/** out[at…at+32) = SHA-256(0x00 ‖ src[from…from+32)): an RFC 9162 leaf of 32 bytes. */
export function leafInto(src: Uint8Array, from: number, out: Uint8Array, at: number): void {
  init();
  loadShifted(0x00, src, from);
  W[8] = (W[8] as number) | 0x800000;
  W[9] = 0;
  W[10] = 0;
  W[11] = 0;
  W[12] = 0;
  W[13] = 0;
  W[14] = 0;
  W[15] = 33 * 8;
  compress();
  digestInto(out, at);
}

/** out[at…at+32) = SHA-256(0x01 ‖ l[lf…lf+32) ‖ r[rf…rf+32)): an RFC 9162 node; out may overlap the inputs. */
export function nodeInto(l: Uint8Array, lf: number, r: Uint8Array, rf: number, out: Uint8Array, at: number): void {
  init();
  loadShifted(0x01, l, lf);
  W[8] = (W[8] as number) | ((r[rf] as number) << 16) | ((r[rf + 1] as number) << 8) | (r[rf + 2] as number);
  for (let i = 9; i < 16; i += 1) W[i] = word(r, rf + 4 * (i - 8) - 1);
  const last = r[rf + 31] as number;
  compress();
  compressLast(last);
  digestInto(out, at);
}

/**
 * leafInto and nodeInto over DataViews, for the tree's own tiles: a big-endian word is one load (and one store),
 * where a Uint8Array takes four of each and the shifts between.
 */
export function leafIntoView(src: DataView, from: number, out: DataView, at: number): void {
  init();
  const last = loadShiftedView(0x00, src, from, 0);
  W[8] = (last << 24) | 0x800000;
  W[9] = 0;
  W[10] = 0;
  W[11] = 0;
  W[12] = 0;
  W[13] = 0;
  W[14] = 0;
  W[15] = 33 * 8;
  compress();
  digestIntoView(out, at);
}

export function nodeIntoView(l: DataView, lf: number, r: DataView, rf: number, out: DataView, at: number): void {
  init();
  const last = loadShiftedView(loadShiftedView(0x01, l, lf, 0), r, rf, 8);
  compress();
  compressLast(last & 0xff);
  digestIntoView(out, at);
}

/**
 * W[i…i+8) = the 32 bytes at src[from…] shifted right by one byte behind the low byte of `carry`; returns the last
 * word read, whose low byte is the one shifted out.
 */
function loadShiftedView(carry: number, src: DataView, from: number, i: number): number {
  let prev = carry;
  for (let k = 0; k < 8; k += 1) {
    const x = src.getInt32(from + 4 * k);
    W[i + k] = (prev << 24) | (x >>> 8);
    prev = x;
  }
  return prev;
}

function digestIntoView(out: DataView, at: number): void {
  for (let i = 0; i < 8; i += 1) out.setInt32(at + 4 * i, H[i] as number);
}

/** SHA-256 of any input (below 2^40 bits). */
export function sha256(data: Uint8Array): Buffer {
  const blocks = Math.floor((data.length + 8) / 64) + 1;
  const padded = new Uint8Array(blocks * 64);
  padded.set(data);
  padded[data.length] = 0x80;
  const bits = data.length * 8;
  const tail = padded.length - 4;
  padded[tail] = bits >>> 24;
  padded[tail + 1] = bits >>> 16;
  padded[tail + 2] = bits >>> 8;
  padded[tail + 3] = bits;
  padded[tail - 1] = Math.floor(data.length / 2 ** 29);
  init();
  for (let at = 0; at < padded.length; at += 64) {
    for (let i = 0; i < 16; i += 1) W[i] = word(padded, at + 4 * i);
    compress();
  }
  const out = Buffer.allocUnsafe(32);
  digestInto(out, 0);
  return out;
}
