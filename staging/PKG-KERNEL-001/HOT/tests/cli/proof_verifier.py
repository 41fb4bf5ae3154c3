"""An independent verifier of cplane proof files, written from docs/proofs.md, RFC 9162 and C2SP signed-note only.

Usage: proof_verifier.py PROOF_FILE VKEY_FILE  ->  prints "ok ..." and exits 0, or prints the reason and exits 1.
"""
import base64
import hashlib
import json
import sys

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey


def sha256(data):
    return hashlib.sha256(data).digest()


def node(left, right):
    return sha256(b"\x01" + left + right)


def parse_vkey(text):
    name, key_id, key = text.strip().split("+", 2)
    raw = base64.b64decode(key, validate=True)
    if len(raw) != 33 or raw[0] != 1:
        raise ValueError("not an Ed25519 vkey")
    if sha256(name.encode() + b"\n\x01" + raw[1:])[:4].hex() != key_id:
        raise ValueError("vkey hash does not match")
    return name, bytes.fromhex(key_id), Ed25519PublicKey.from_public_bytes(raw[1:])


def open_checkpoint(note, vkey):
    name, key_id, public = vkey
    split = note.rindex("\n\n")
    text = note[: split + 1]
    verified = False
    for line in note[split + 2 :].splitlines():
        dash, sig_name, sig = line.split(" ")
        raw = base64.b64decode(sig, validate=True)
        if dash == "\u2014" and sig_name == name and raw[:4] == key_id:
            public.verify(raw[4:], text.encode())  # raises on a bad signature
            verified = True
    if not verified:
        raise ValueError("checkpoint not signed by the key")
    origin, size, root = text.split("\n")[:3]
    return origin, int(size), base64.b64decode(root, validate=True)


def entry_hash(e):
    q = lambda s: json.dumps(s, ensure_ascii=False, separators=(",", ":"))
    text = (
        '{"decision":' + q(e["decision"]) + ',"event_type":' + q(e["event_type"]) + ',"id":' + q(e["id"])
        + ',"metadata":' + e["metadata"] + ',"previous_hash":' + q(e["previous_hash"]) + ',"reason":' + q(e["reason"])
        + ',"submission_id":' + q(e["submission_id"]) + ',"timestamp":' + q(e["timestamp"]) + "}"
    )
    return hashlib.sha256(text.encode()).hexdigest()


def verify_inclusion(index, size, leaf, path, root):
    # RFC 9162 section 2.1.3.2
    if index >= size:
        return False
    fn, sn, r = index, size - 1, leaf
    for p in path:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            r = node(p, r)
            while not fn & 1 and fn != 0:
                fn >>= 1
                sn >>= 1
        else:
            r = node(r, p)
        fn >>= 1
        sn >>= 1
    return sn == 0 and r == root


def verify_consistency(first, second, first_hash, second_hash, path):
    # RFC 9162 section 2.1.4.2
    if first == second:
        return not path and first_hash == second_hash
    if first == 0 or first > second or not path:
        return first == 0 and not path
    path = list(path)
    if first & (first - 1) == 0:
        path.insert(0, first_hash)
    fn, sn = first - 1, second - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            fr = node(c, fr)
            sr = node(c, sr)
            while not fn & 1 and fn != 0:
                fn >>= 1
                sn >>= 1
        else:
            sr = node(sr, c)
        fn >>= 1
        sn >>= 1
    return fr == first_hash and sr == second_hash and sn == 0


def main(proof_file, vkey_file):
    proof = json.load(open(proof_file, encoding="utf-8"))
    vkey = parse_vkey(open(vkey_file, encoding="utf-8").read())
    b64 = lambda hashes: [base64.b64decode(h, validate=True) for h in hashes]
    if proof["kind"] == "cplane-inclusion-proof":
        origin, size, root = open_checkpoint(proof["checkpoint"], vkey)
        e = proof["entry"]
        if size != proof["tree_size"]:
            return "tree size differs from the checkpoint"
        if entry_hash(e) != e["entry_hash"]:
            return "entry does not hash to its entry_hash"
        leaf = sha256(b"\x00" + bytes.fromhex(e["entry_hash"]))
        if not verify_inclusion(proof["leaf_index"], size, leaf, b64(proof["audit_path"]), root):
            return "inclusion proof fails"
        return None
    if proof["kind"] == "cplane-consistency-proof":
        o1, s1, r1 = open_checkpoint(proof["old_checkpoint"], vkey)
        o2, s2, r2 = open_checkpoint(proof["new_checkpoint"], vkey)
        if o1 != o2 or s1 != proof["old_size"] or s2 != proof["new_size"]:
            return "checkpoints do not match the proof"
        if not verify_consistency(s1, s2, r1, r2, b64(proof["consistency_path"])):
            return "consistency proof fails"
        return None
    return "unknown proof kind"


if __name__ == "__main__":
    try:
        problem = main(sys.argv[1], sys.argv[2])
    except Exception as error:  # a malformed file or a bad signature
        problem = f"{type(error).__name__}: {error}"
    print("ok" if problem is None else problem)
    sys.exit(0 if problem is None else 1)
