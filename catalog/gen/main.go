// Command gen writes the project's OLM bundles and its file-based catalog
// from the tree, with the operator-framework/api types and operator-registry
// as libraries (no operator-sdk or opm binary):
//
//	go run . bundle   # catalog/bundles/<package>/<version>/ for the current release
//	go run . catalog  # catalog/index/<package>/catalog.yaml from catalog/template.yaml
//
// `make bundle` and `make catalog` run it from the repository root. It is a
// module of its own, outside go.work, so that no operator module depends on
// OLM's tooling.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/sirupsen/logrus"
)

func main() {
	// operator-registry logs every optional file a bundle lacks.
	logrus.SetLevel(logrus.WarnLevel)
	if err := run(context.Background(), os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("gen", flag.ContinueOnError)
	root := fs.String("root", "../..", "The repository's root.")
	registry := fs.String("registry", DefaultRegistry, "The registry of the operator and bundle images.")
	release := fs.String("version", "", "The release the tree builds; default: catalog/VERSION.")
	fs.Usage = func() {
		_, _ = fmt.Fprintln(fs.Output(), "usage: gen [flags] bundle|catalog")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return errors.New("say bundle or catalog")
	}
	catalogDir := filepath.Join(*root, "catalog")
	tmpl, err := readTemplate(filepath.Join(catalogDir, "template.yaml"))
	if err != nil {
		return err
	}
	switch fs.Arg(0) {
	case "bundle":
		if *release == "" {
			v, err := os.ReadFile(filepath.Join(catalogDir, "VERSION"))
			if err != nil {
				return err
			}
			*release = strings.TrimSpace(string(v))
		}
		bundles, err := tmpl.bundles()
		if err != nil {
			return err
		}
		src := sources{root: *root}
		wrote := 0
		for _, b := range bundles {
			if !generated(b, *release) {
				continue
			}
			if err := src.writeBundle(filepath.Join(catalogDir, b.Dir()), *registry, b); err != nil {
				return err
			}
			fmt.Printf("gen: wrote catalog/%s\n", b.Dir())
			wrote++
		}
		if wrote == 0 {
			return fmt.Errorf("catalog/template.yaml names no bundle of release %s", *release)
		}
		return nil
	case "catalog":
		cfg, err := tmpl.render(ctx, catalogDir, *registry)
		if err != nil {
			return err
		}
		if err := writeCatalog(cfg, filepath.Join(catalogDir, "index")); err != nil {
			return err
		}
		fmt.Printf("gen: wrote catalog/index for %d packages, %d bundles\n", len(cfg.Packages), len(cfg.Bundles))
		return nil
	default:
		fs.Usage()
		return fmt.Errorf("unknown command %q", fs.Arg(0))
	}
}
