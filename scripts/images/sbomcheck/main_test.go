package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// schemas is cyclonedx-go's schema directory, in the module cache.
func schemas(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/CycloneDX/cyclonedx-go").Output()
	if err != nil {
		t.Fatalf("go list -m github.com/CycloneDX/cyclonedx-go: %v", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "schema")
}

// A BOM as cyclonedx-gomod bin writes one, cut to one module; each case
// below changes one thing of it.
const good = `{
  "bomFormat": "CycloneDX",
  "specVersion": "1.6",
  "version": 1,
  "metadata": {
    "component": {"bom-ref": "main", "type": "application", "name": "github.com/operator-workshops/workshop/operators/gordon", "version": "v0.3.0",
      "purl": "pkg:golang/github.com/operator-workshops/workshop/operators/gordon@v0.3.0?type=module"}
  },
  "components": [
    {"bom-ref": "yaml", "type": "library", "name": "go.yaml.in/yaml/v3", "version": "v3.0.4",
      "purl": "pkg:golang/go.yaml.in/yaml/v3@v3.0.4?type=module", "licenses": [{"license": {"id": "MIT"}}]}
  ]
}`

func TestCheck(t *testing.T) {
	dir := &schemaDir{dir: schemas(t)}
	for name, tc := range map[string]struct {
		old, new string
		edit     func(map[string]any)
		want     string
	}{
		"as written":               {},
		"a component of no type":   {old: `"type": "library"`, new: `"type": "gadget"`, want: "must be one of the following"},
		"a license SPDX lacks":     {old: `"id": "MIT"`, new: `"id": "NOT-A-LICENSE"`, want: "licenses.0"},
		"no module":                {edit: func(m map[string]any) { delete(m, "components") }, want: "no components"},
		"no main module":           {edit: func(m map[string]any) { delete(m["metadata"].(map[string]any), "component") }, want: "no metadata.component"},
		"a module without purl":    {old: `"purl": "pkg:golang/go.yaml.in`, new: `"cpe": "pkg:golang/go.yaml.in`, want: "package URL"},
		"another format":           {old: `"CycloneDX"`, new: `"SPDX"`, want: "bomFormat"},
		"a version without schema": {old: `"1.6"`, new: `"1.9"`, want: "no schema"},
		"a schema's path":          {old: `"1.6"`, new: `"1.6/../../x"`, want: "not a CycloneDX"},
	} {
		t.Run(name, func(t *testing.T) {
			if !strings.Contains(good, tc.old) {
				t.Fatalf("the BOM holds no %q", tc.old)
			}
			doc := []byte(strings.Replace(good, tc.old, tc.new, 1))
			if tc.edit != nil {
				var m map[string]any
				if err := json.Unmarshal(doc, &m); err != nil {
					t.Fatal(err)
				}
				tc.edit(m)
				var err error
				if doc, err = json.Marshal(m); err != nil {
					t.Fatal(err)
				}
			}
			file := filepath.Join(t.TempDir(), "bom.json")
			if err := os.WriteFile(file, doc, 0o644); err != nil {
				t.Fatal(err)
			}
			err := check(dir, file)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want an error saying %q", err, tc.want)
			}
		})
	}
}
