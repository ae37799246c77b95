package main

import (
	"os"
	"path/filepath"
	"testing"
)

// OLM's call: a file copied into a directory that exists, executable still.
func TestCopiesAnExecutableIntoADirectory(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "cpb")
	if err := os.WriteFile(src, []byte("#!program"), 0o755); err != nil {
		t.Fatal(err)
	}
	util := filepath.Join(dir, "util")
	if err := os.Mkdir(util, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := run(src, filepath.Join(util, "cpb"), true, false); err != nil {
		t.Fatal(err)
	}
	if err := run(src, util, true, false); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(util, "cpb"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm()&0o111 == 0 {
		t.Errorf("the copy is not executable: %v", fi.Mode())
	}
	if got, _ := os.ReadFile(filepath.Join(util, "cpb")); string(got) != "#!program" {
		t.Errorf("the copy holds %q", got)
	}
}

// A directory is copied with -R only, with what it holds.
func TestCopiesADirectoryWithR(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "manifests")
	if err := os.MkdirAll(filepath.Join(src, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "sub", "csv.yaml"), []byte("kind: CSV"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(src, filepath.Join(dir, "copy"), false, false); err == nil {
		t.Error("a directory was copied without -R")
	}
	if err := run(src, filepath.Join(dir, "copy"), true, false); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "copy", "sub", "csv.yaml")); string(got) != "kind: CSV" {
		t.Errorf("the copy holds %q", got)
	}
}

// OLM's command line, and what is refused.
func TestParse(t *testing.T) {
	src, dst, r, v, err := parse([]string{"-Rv", "/bin/cpb", "/util/cpb"})
	if err != nil || src != "/bin/cpb" || dst != "/util/cpb" || !r || !v {
		t.Errorf("-Rv /bin/cpb /util/cpb: %q %q %v %v %v", src, dst, r, v, err)
	}
	if _, _, _, _, err := parse([]string{"-x", "a", "b"}); err == nil {
		t.Error("-x was accepted")
	}
	if _, _, _, _, err := parse([]string{"a"}); err == nil {
		t.Error("one path was accepted")
	}
}
