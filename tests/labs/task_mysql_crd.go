package labs

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"
)

// The check of lab 5's task gives the API server a copy of the learner's
// CRD in a group of its own, so that the operator's CRD, mysqls.otus.homework,
// stays as it is; the copy is deleted when the check ends. Its kind and
// names are its own too: with a second kind MySQL, `kubectl get mysql`
// would find two, and its discovery cache would keep the copy's after the
// copy is gone.
const (
	homeworkGroup = "otus.homework"
	checkGroup    = "lab-05-check.otus.homework"
	checkKind     = "LabCheckMySQL"
	checkPlural   = "labcheckmysqls"
)

// homeworkMySQL is the homework's deploy/cr.yml (seed 002) in the check's
// group, with its fields as lines to leave out.
var homeworkMySQL = []string{"image: mysql:5.7", "database: otus-database", "password: otuspassword", "storage_size: 1Gi"}

// mysqlYAML is a MySQL of the check's group whose spec has fields, or no
// spec at all when fields is nil.
func mysqlYAML(fields ...string) string {
	y := "apiVersion: " + checkGroup + "/v1\nkind: " + checkKind + "\nmetadata:\n  name: mysql-instance\n"
	if fields != nil {
		y += "spec:\n"
		for _, f := range fields {
			y += "  " + f + "\n"
		}
	}
	return y
}

// mysqlCRDTasks checks lab 5's task (labs/tasks/mysql-crd): the homework's
// CRD, crd.yaml, must make the API server refuse a MySQL whose spec lacks a
// line, and still take the homework's MySQL.
func mysqlCRDTasks(ctx context.Context, r *taskRun) {
	file := filepath.Join(r.code, "crd.yaml")
	var copyYAML []byte
	r.gate(file+" is the homework's CustomResourceDefinition: apiextensions.k8s.io/v1, mysqls.otus.homework, kind MySQL, namespaced, version v1 served and stored", "the file is not the homework's CRD", func() error {
		text, err := os.ReadFile(filepath.Join(r.root, file))
		if err != nil {
			return err
		}
		copyYAML, err = checkCopy(text)
		return err
	})

	crd := checkPlural + "." + checkGroup
	r.gate("the API server takes it (as "+crd+", a copy the check makes and deletes)", "the API server refuses the CRD", func() error {
		if _, err := r.kubectl(ctx, string(copyYAML), "apply", "-f", "-"); err != nil {
			return err
		}
		_, err := r.kubectl(ctx, "", "wait", "--for=condition=Established", "crd/"+crd, "--timeout=1m")
		return err
	})
	defer func() {
		_, _ = r.kubectl(context.WithoutCancel(ctx), "", "delete", "crd", crd, "--ignore-not-found", "--wait=false")
	}()

	create := []string{"create", "--dry-run=server", "-n", "default", "-f", "-"}
	r.check("the homework's MySQL (deploy/cr.yml without useless_data) is accepted", func() error {
		_, err := r.kubectl(ctx, mysqlYAML(homeworkMySQL...), create...)
		return err
	})
	r.check("the homework's MySQL with its useless_data line is refused: the schema names the spec's fields", func() error {
		return r.refused(ctx, mysqlYAML(append(homeworkMySQL, `useless_data: "useless info"`)...), `unknown field "spec.useless_data"`, create...)
	})
	r.check("task: a MySQL without a spec is refused", func() error {
		return r.refused(ctx, mysqlYAML(), "spec: Required value", create...)
	})
	for i, line := range homeworkMySQL {
		field, _, _ := strings.Cut(line, ":")
		r.check("task: a MySQL whose spec lacks "+field+" is refused", func() error {
			rest := append(append([]string{}, homeworkMySQL[:i]...), homeworkMySQL[i+1:]...)
			return r.refused(ctx, mysqlYAML(rest...), "spec."+field+": Required value", create...)
		})
	}
}

// checkCopy returns the CRD text, the learner's, in the check's group and
// with the check's names, or says how it is not the homework's CRD.
func checkCopy(text []byte) ([]byte, error) {
	var crd map[string]any
	if err := yaml.Unmarshal(text, &crd); err != nil {
		return nil, fmt.Errorf("not YAML: %w", err)
	}
	get := func(path ...string) any {
		var v any = crd
		for _, p := range path {
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[p]
		}
		return v
	}
	for _, want := range []struct {
		path  []string
		value string
	}{
		{[]string{"apiVersion"}, "apiextensions.k8s.io/v1"},
		{[]string{"kind"}, "CustomResourceDefinition"},
		{[]string{"metadata", "name"}, "mysqls." + homeworkGroup},
		{[]string{"spec", "group"}, homeworkGroup},
		{[]string{"spec", "scope"}, "Namespaced"},
		{[]string{"spec", "names", "kind"}, "MySQL"},
		{[]string{"spec", "names", "plural"}, "mysqls"},
	} {
		if got := get(want.path...); got != want.value {
			return nil, fmt.Errorf("%s is %v, not %s", strings.Join(want.path, "."), got, want.value)
		}
	}
	versions, _ := get("spec", "versions").([]any)
	v1 := false
	for _, v := range versions {
		if m, ok := v.(map[string]any); ok && m["name"] == "v1" && m["served"] == true && m["storage"] == true {
			v1 = true
		}
	}
	if !v1 {
		return nil, fmt.Errorf("spec.versions has no version v1 with served: true and storage: true")
	}
	crd["metadata"].(map[string]any)["name"] = checkPlural + "." + checkGroup
	spec := crd["spec"].(map[string]any)
	spec["group"] = checkGroup
	spec["names"] = map[string]any{"kind": checkKind, "plural": checkPlural}
	return yaml.Marshal(crd)
}
