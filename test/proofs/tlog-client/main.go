// Command tlog-client reads cplane's exported tiles and proofs with Go's checksum-database client libraries
// (golang.org/x/mod/sumdb/note and sumdb/tlog), the origin of C2SP signed notes and tlog tiles. It uses nothing of
// cplane: it is the third-party client the docs (docs/proofs.md) say can read and verify them.
//
//	tlog-client tiles DIR [INDEX...]    DIR/checkpoint opened with DIR/vkey; the tree hash from the tiles equals its
//	                                    root; each record INDEX proven from the tiles and checked against it
//	tlog-client inclusion VKEY FILE     a cplane inclusion proof, checked with tlog.CheckRecord
//	tlog-client consistency VKEY FILE   a cplane consistency proof, checked with tlog.CheckTree
//
// Exit 0 and one "ok: …" line when everything holds; exit 1 and the reason otherwise.
package main

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// tileHeight is C2SP tlog-tiles' tile height: 2^8 = 256 hashes a tile.
const tileHeight = 8

// dirTiles reads tiles from an export directory. Go's Tile.Path carries the height as its first element
// (tile/8/L/N…); C2SP tlog-tiles fixes the height at 8 and leaves it out (tile/L/N…).
type dirTiles struct{ dir string }

func (d dirTiles) Height() int { return tileHeight }

func (d dirTiles) ReadTiles(tiles []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(tiles))
	for i, t := range tiles {
		goPath := t.Path()
		prefix := fmt.Sprintf("tile/%d/", tileHeight)
		if !strings.HasPrefix(goPath, prefix) {
			return nil, fmt.Errorf("unexpected tile path %s", goPath)
		}
		data, err := os.ReadFile(filepath.Join(d.dir, filepath.FromSlash("tile/"+strings.TrimPrefix(goPath, prefix))))
		if err != nil {
			return nil, err
		}
		out[i] = data
	}
	return out, nil
}

func (d dirTiles) SaveTiles([]tlog.Tile, [][]byte) {}

type head struct {
	origin string
	tree   tlog.Tree
}

// openCheckpoint verifies a checkpoint note with the verifier key and parses its body (tlog-checkpoint).
func openCheckpoint(msg []byte, vkey string) (head, error) {
	verifier, err := note.NewVerifier(strings.TrimSpace(vkey))
	if err != nil {
		return head{}, fmt.Errorf("vkey: %w", err)
	}
	n, err := note.Open(msg, note.VerifierList(verifier))
	if err != nil {
		return head{}, fmt.Errorf("checkpoint note: %w", err)
	}
	lines := strings.Split(n.Text, "\n")
	if len(lines) < 4 || lines[len(lines)-1] != "" {
		return head{}, errors.New("checkpoint body is not origin, size and root lines")
	}
	if lines[0] != verifier.Name() {
		return head{}, fmt.Errorf("checkpoint origin %q is not the key name %q", lines[0], verifier.Name())
	}
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil || size < 0 {
		return head{}, fmt.Errorf("checkpoint size %q", lines[1])
	}
	root, err := tlog.ParseHash(lines[2])
	if err != nil {
		return head{}, fmt.Errorf("checkpoint root: %w", err)
	}
	return head{origin: lines[0], tree: tlog.Tree{N: size, Hash: root}}, nil
}

func hashes(list []string) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(list))
	for i, s := range list {
		h, err := tlog.ParseHash(s)
		if err != nil {
			return nil, fmt.Errorf("proof hash %d: %w", i, err)
		}
		out[i] = h
	}
	return out, nil
}

func tiles(dir string, indexes []string) (string, error) {
	vkey, err := os.ReadFile(filepath.Join(dir, "vkey"))
	if err != nil {
		return "", err
	}
	msg, err := os.ReadFile(filepath.Join(dir, "checkpoint"))
	if err != nil {
		return "", err
	}
	h, err := openCheckpoint(msg, string(vkey))
	if err != nil {
		return "", err
	}
	reader := tlog.TileHashReader(h.tree, dirTiles{dir})
	root, err := tlog.TreeHash(h.tree.N, reader)
	if err != nil {
		return "", fmt.Errorf("tree hash from the tiles: %w", err)
	}
	if root != h.tree.Hash {
		return "", fmt.Errorf("tree hash from the tiles %s is not the checkpoint root %s", root, h.tree.Hash)
	}
	for _, s := range indexes {
		index, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return "", err
		}
		proof, err := tlog.ProveRecord(h.tree.N, index, reader)
		if err != nil {
			return "", fmt.Errorf("record %d proven from the tiles: %w", index, err)
		}
		leaf, err := reader.ReadHashes([]int64{tlog.StoredHashIndex(0, index)})
		if err != nil {
			return "", fmt.Errorf("record %d hash from the tiles: %w", index, err)
		}
		if err := tlog.CheckRecord(proof, h.tree.N, h.tree.Hash, index, leaf[0]); err != nil {
			return "", fmt.Errorf("record %d: %w", index, err)
		}
	}
	return fmt.Sprintf("ok: %s tree of %d, root %s from the tiles, %d records proven", h.origin, h.tree.N, root, len(indexes)), nil
}

type inclusionProof struct {
	Entry struct {
		EntryHash string `json:"entry_hash"`
	} `json:"entry"`
	LeafIndex  int64    `json:"leaf_index"`
	TreeSize   int64    `json:"tree_size"`
	AuditPath  []string `json:"audit_path"`
	Checkpoint string   `json:"checkpoint"`
}

func inclusion(vkey string, file []byte) (string, error) {
	var p inclusionProof
	if err := json.Unmarshal(file, &p); err != nil {
		return "", err
	}
	h, err := openCheckpoint([]byte(p.Checkpoint), vkey)
	if err != nil {
		return "", err
	}
	if p.TreeSize != h.tree.N {
		return "", fmt.Errorf("proof tree size %d is not the checkpoint's %d", p.TreeSize, h.tree.N)
	}
	record, err := hex.DecodeString(p.Entry.EntryHash)
	if err != nil || len(record) != tlog.HashSize {
		return "", errors.New("entry_hash is not 32 bytes of hex")
	}
	path, err := hashes(p.AuditPath)
	if err != nil {
		return "", err
	}
	// The leaf's record is the entry hash's 32 bytes: leaf hash = SHA-256(0x00 ‖ record).
	if err := tlog.CheckRecord(path, h.tree.N, h.tree.Hash, p.LeafIndex, tlog.RecordHash(record)); err != nil {
		return "", err
	}
	return fmt.Sprintf("ok: leaf %d in %s tree of %d", p.LeafIndex, h.origin, h.tree.N), nil
}

type consistencyProof struct {
	OldSize         int64    `json:"old_size"`
	NewSize         int64    `json:"new_size"`
	ConsistencyPath []string `json:"consistency_path"`
	OldCheckpoint   string   `json:"old_checkpoint"`
	NewCheckpoint   string   `json:"new_checkpoint"`
}

func consistency(vkey string, file []byte) (string, error) {
	var p consistencyProof
	if err := json.Unmarshal(file, &p); err != nil {
		return "", err
	}
	older, err := openCheckpoint([]byte(p.OldCheckpoint), vkey)
	if err != nil {
		return "", fmt.Errorf("old %w", err)
	}
	newer, err := openCheckpoint([]byte(p.NewCheckpoint), vkey)
	if err != nil {
		return "", fmt.Errorf("new %w", err)
	}
	if older.tree.N != p.OldSize || newer.tree.N != p.NewSize {
		return "", errors.New("proof sizes are not the checkpoints' sizes")
	}
	path, err := hashes(p.ConsistencyPath)
	if err != nil {
		return "", err
	}
	if err := tlog.CheckTree(path, newer.tree.N, newer.tree.Hash, older.tree.N, older.tree.Hash); err != nil {
		return "", err
	}
	return fmt.Sprintf("ok: %s tree of %d extends the tree of %d", newer.origin, newer.tree.N, older.tree.N), nil
}

func run(args []string) (string, error) {
	if len(args) >= 2 && args[0] == "tiles" {
		return tiles(args[1], args[2:])
	}
	if len(args) != 3 || (args[0] != "inclusion" && args[0] != "consistency") {
		return "", errors.New("usage: tlog-client tiles DIR [INDEX...] | inclusion VKEY FILE | consistency VKEY FILE")
	}
	vkey, err := os.ReadFile(args[1])
	if err != nil {
		return "", err
	}
	file, err := os.ReadFile(args[2])
	if err != nil {
		return "", err
	}
	if args[0] == "inclusion" {
		return inclusion(string(vkey), file)
	}
	return consistency(string(vkey), file)
}

func main() {
	out, err := run(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "rejected:", err)
		os.Exit(1)
	}
	fmt.Println(out)
}
