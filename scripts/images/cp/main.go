// Command cp copies files, as the OLM image's /bin/cp does for OLM: its
// bundle unpack Jobs run `/bin/cp -Rv /bin/cpb /util/cpb` in the image
// they are given as the "util image". With it, the OLM image is Go
// programs alone, built without root (no Debian root filesystem).
//
// usage: cp [-R] [-v] SOURCE DEST
//
// SOURCE, a file or (with -R) a directory, is copied to DEST, or into DEST
// when DEST is a directory; a file keeps its permission bits. -v prints
// each file copied.
package main

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

func main() {
	src, dst, recursive, verbose, err := parse(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "cp:", err)
		fmt.Fprintln(os.Stderr, "usage: cp [-R] [-v] SOURCE DEST")
		os.Exit(2)
	}
	if err := run(src, dst, recursive, verbose); err != nil {
		fmt.Fprintln(os.Stderr, "cp:", err)
		os.Exit(1)
	}
}

// parse reads cp's arguments, its options one letter each and grouped as
// OLM groups them (-Rv).
func parse(args []string) (src, dst string, recursive, verbose bool, err error) {
	var paths []string
	for _, a := range args {
		if len(a) < 2 || a[0] != '-' {
			paths = append(paths, a)
			continue
		}
		for _, o := range a[1:] {
			switch o {
			case 'R', 'r':
				recursive = true
			case 'v':
				verbose = true
			default:
				return "", "", false, false, fmt.Errorf("unknown option -%c", o)
			}
		}
	}
	if len(paths) != 2 {
		return "", "", false, false, fmt.Errorf("want SOURCE and DEST, got %q", paths)
	}
	return paths[0], paths[1], recursive, verbose, nil
}

func run(src, dst string, recursive, verbose bool) error {
	if fi, err := os.Stat(dst); err == nil && fi.IsDir() {
		dst = filepath.Join(dst, filepath.Base(src))
	}
	fi, err := os.Stat(src)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return copyFile(src, dst, fi.Mode().Perm(), verbose)
	}
	if !recursive {
		return fmt.Errorf("%s is a directory (not copied without -R)", src)
	}
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, info.Mode().Perm())
		}
		return copyFile(path, to, info.Mode().Perm(), verbose)
	})
}

func copyFile(src, dst string, perm fs.FileMode, verbose bool) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	if verbose {
		fmt.Printf("'%s' -> '%s'\n", src, dst)
	}
	return nil
}
