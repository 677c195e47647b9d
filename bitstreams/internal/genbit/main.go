// Command genbit writes the emulator's bitstream files and records them in
// the manifests. It runs from `go generate ./bitstreams/...` (the
// //go:generate line is in bitstreams/catalogue.go):
//
//	go run ./internal/genbit [-dir .]
//
// For every manifest in DIR/catalogue it builds one file per part and format
// (Manifest.FormatsFor) into DIR/files, named DESIGN_PART.FORMAT, and
// rewrites the manifest's `files:` list, and nothing else in it, with each
// file's path, part, format, size, sha256 (and Quartus checksum for .rbf).
// Files in DIR/files that no manifest produces are removed. A new design
// needs only its manifest and a re-run.
package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/labrunner/labrunner/bitstreams"
)

func main() {
	dir := flag.String("dir", ".", "the bitstreams package directory (holding catalogue/ and files/)")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("genbit: ")
	changed, err := generate(*dir)
	if err != nil {
		log.Fatal(err)
	}
	for _, c := range changed {
		log.Print(c)
	}
}

// generate regenerates the files and the manifests' files: lists under dir
// and returns a line per change made.
func generate(dir string) ([]string, error) {
	catDir := filepath.Join(dir, "catalogue")
	filesDir := filepath.Join(dir, "files")
	manifests, err := filepath.Glob(filepath.Join(catDir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	sort.Strings(manifests)
	if err := os.MkdirAll(filesDir, 0o755); err != nil {
		return nil, err
	}
	var changed []string
	produced := map[string]bool{}
	for _, mp := range manifests {
		src, err := os.ReadFile(mp)
		if err != nil {
			return nil, err
		}
		m, err := bitstreams.ParseManifest(mp, src)
		if err != nil {
			return nil, fmt.Errorf("fix the manifest first:\n%w", err)
		}
		var entries []bitstreams.File
		for _, part := range m.Parts {
			for _, format := range m.FormatsFor(part) {
				data, err := synth(m, part, format)
				if err != nil {
					return nil, err
				}
				name := fmt.Sprintf("%s_%s.%s", m.Name, strings.ToLower(part), format)
				produced[name] = true
				p := filepath.Join(filesDir, name)
				if old, err := os.ReadFile(p); err != nil || !bytes.Equal(old, data) {
					if err := os.WriteFile(p, data, 0o644); err != nil {
						return nil, err
					}
					changed = append(changed, "wrote "+p)
				}
				sum := sha256.Sum256(data)
				f := bitstreams.File{
					Path: "../files/" + name, Part: part, Format: format,
					Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:]),
				}
				if format == "rbf" || format == "sof" {
					f.Checksum = fmt.Sprintf("0x%08X", bitstreams.QuartusChecksum(data))
				}
				entries = append(entries, f)
			}
		}
		out, err := rewriteFiles(src, entries)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", mp, err)
		}
		if !bytes.Equal(out, src) {
			if _, err := bitstreams.ParseManifest(mp, out); err != nil {
				return nil, fmt.Errorf("the rewritten manifest does not parse (a generator bug):\n%w", err)
			}
			if err := os.WriteFile(mp, out, 0o644); err != nil {
				return nil, err
			}
			changed = append(changed, "updated the files: list of "+mp)
		}
	}
	stale, err := os.ReadDir(filesDir)
	if err != nil {
		return nil, err
	}
	for _, e := range stale {
		if e.IsDir() || produced[e.Name()] || e.Name() == Readme {
			continue
		}
		p := filepath.Join(filesDir, e.Name())
		if err := os.Remove(p); err != nil {
			return nil, err
		}
		changed = append(changed, "removed "+p+" (no manifest produces it)")
	}
	return changed, nil
}

// Readme explains files/ and keeps the directory embeddable when no
// manifest lists a file.
const Readme = "README.md"

const filesComment = "# written by go generate ./bitstreams/... (internal/genbit): do not edit"

// rewriteFiles replaces the top-level files: entry of a manifest (the key's
// line through the last line of its value) with the entries, leaving every
// other line as it was. Without a files: key the list is appended.
func rewriteFiles(src []byte, entries []bitstreams.File) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, err
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("the manifest is not a mapping")
	}
	var b strings.Builder
	b.WriteString("files: " + filesComment + "\n")
	if len(entries) == 0 {
		b.Reset()
		b.WriteString("files: [] " + filesComment + "\n")
	}
	for _, f := range entries {
		fmt.Fprintf(&b, "  - {path: %s, part: %s, format: %s, size: %d, sha256: %s", f.Path, f.Part, f.Format, f.Size, f.SHA256)
		if f.Checksum != "" {
			fmt.Fprintf(&b, ", checksum: %q", f.Checksum)
		}
		b.WriteString("}\n")
	}
	block := b.String()

	lines := strings.SplitAfter(string(src), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	root := doc.Content[0]
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if k.Value != "files" {
			continue
		}
		first, last := k.Line, lastLine(v)
		if first < 1 || last > len(lines) || last < first {
			return nil, fmt.Errorf("cannot locate the files: list (lines %d..%d of %d)", first, last, len(lines))
		}
		out := strings.Join(lines[:first-1], "") + block + strings.Join(lines[last:], "")
		return []byte(out), nil
	}
	out := string(src)
	if out != "" && !strings.HasSuffix(out, "\n") {
		out += "\n"
	}
	return []byte(out + block), nil
}

// lastLine is the last line a node's text reaches.
func lastLine(n *yaml.Node) int {
	l := n.Line
	for _, c := range n.Content {
		l = max(l, lastLine(c))
	}
	return l
}
