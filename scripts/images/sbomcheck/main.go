// Command sbomcheck checks SBOMs as make release writes them: each FILE
// must be a CycloneDX JSON document that its specVersion's JSON schema
// accepts (the schemas cyclonedx-go publishes, in its module's schema/
// directory, which -schemas names), and that describes a Go binary: its
// main module as metadata.component, and the modules linked into it, each
// with a version and a package URL.
//
// usage: sbomcheck -schemas DIR FILE...
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	cdx "github.com/CycloneDX/cyclonedx-go"
	"github.com/xeipuuv/gojsonschema"
)

func main() {
	schemas := flag.String("schemas", "", "the directory of CycloneDX's JSON schemas (cyclonedx-go's schema/)")
	flag.Parse()
	if *schemas == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: sbomcheck -schemas DIR FILE...")
		os.Exit(2)
	}
	failed := false
	dir := &schemaDir{dir: *schemas}
	for _, file := range flag.Args() {
		if err := check(dir, file); err != nil {
			fmt.Fprintf(os.Stderr, "sbomcheck: %s: %v\n", file, err)
			failed = true
		}
	}
	if failed {
		os.Exit(1)
	}
}

// check checks one SBOM file against the schemas in dir.
func check(dir *schemaDir, file string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var head struct {
		BOMFormat   string `json:"bomFormat"`
		SpecVersion string `json:"specVersion"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	if head.BOMFormat != cdx.BOMFormat {
		return fmt.Errorf("bomFormat %q, want %s", head.BOMFormat, cdx.BOMFormat)
	}
	schema, err := dir.schema(head.SpecVersion)
	if err != nil {
		return err
	}
	result, err := schema.Validate(gojsonschema.NewBytesLoader(data))
	if err != nil {
		return fmt.Errorf("validating against CycloneDX %s's schema: %w", head.SpecVersion, err)
	}
	if !result.Valid() {
		msgs := make([]string, 0, len(result.Errors()))
		for _, e := range result.Errors() {
			msgs = append(msgs, e.String())
		}
		return fmt.Errorf("CycloneDX %s's schema refuses it:\n  %s", head.SpecVersion, strings.Join(msgs, "\n  "))
	}
	var bom cdx.BOM
	if err := json.Unmarshal(data, &bom); err != nil {
		return err
	}
	return describesBinary(&bom)
}

// schemaDir is a directory of CycloneDX's JSON schemas, each compiled
// once, when a document of its version is first checked.
type schemaDir struct {
	dir      string
	compiled map[string]*gojsonschema.Schema
}

// schema is the compiled JSON schema of CycloneDX version.
func (d *schemaDir) schema(version string) (*gojsonschema.Schema, error) {
	if s, ok := d.compiled[version]; ok {
		return s, nil
	}
	if !strings.HasPrefix(version, "1.") || strings.ContainsAny(version, "/\\") {
		return nil, fmt.Errorf("specVersion %q: not a CycloneDX 1.x version", version)
	}
	name := "bom-" + version + ".schema.json"
	doc, err := os.ReadFile(filepath.Join(d.dir, name))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("specVersion %s: no schema %s in %s", version, name, d.dir)
	} else if err != nil {
		return nil, err
	}
	// The schema names the two it refers to by their $id on
	// cyclonedx.org; they are read from dir, never fetched.
	loader := gojsonschema.NewSchemaLoader()
	for _, ref := range []string{"spdx.schema.json", "jsf-0.82.schemax.json"} {
		refDoc, err := os.ReadFile(filepath.Join(d.dir, ref))
		if err != nil {
			return nil, err
		}
		if err := loader.AddSchemas(gojsonschema.NewBytesLoader(refDoc)); err != nil {
			return nil, fmt.Errorf("%s: %w", ref, err)
		}
	}
	s, err := loader.Compile(gojsonschema.NewBytesLoader(doc))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if d.compiled == nil {
		d.compiled = map[string]*gojsonschema.Schema{}
	}
	d.compiled[version] = s
	return s, nil
}

// describesBinary checks what cyclonedx-gomod bin writes of a Go binary:
// the main module, and every module linked in with a version and a
// package URL.
func describesBinary(bom *cdx.BOM) error {
	if bom.Metadata == nil || bom.Metadata.Component == nil || bom.Metadata.Component.Name == "" {
		return errors.New("no metadata.component: the SBOM names no binary's main module")
	}
	if bom.Components == nil || len(*bom.Components) == 0 {
		return errors.New("no components: the SBOM lists no module of the binary")
	}
	for _, c := range *bom.Components {
		if c.Version == "" || !strings.HasPrefix(c.PackageURL, "pkg:golang/") {
			return fmt.Errorf("component %q: version %q, package URL %q; want a Go module's", c.Name, c.Version, c.PackageURL)
		}
	}
	return nil
}
