package labs

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// kubebuilderNamespace is where the checks of lab 10's task run the
// learner's operator.
const kubebuilderNamespace = "lab-10-tasks"

// kubebuilderTasks checks lab 10's task (labs/tasks/kubebuilder): the gordon
// operator the learner scaffolded with kubebuilder and wrote. Its CRD must
// be the workshop's Gordon, its RBAC must let it manage pods, and it must do
// what lab 7's operator does: 3 pods for a Gordon of 3, a deleted pod
// replaced, the pods gone with the Gordon.
func kubebuilderTasks(ctx context.Context, r *taskRun) {
	crd := filepath.Join(r.code, "config", "crd", "bases", "operator.prgcont.cz_gordons.yaml")
	r.gate("your project has the CRD kubebuilder makes for the Gordon, "+crd+" (make manifests), and the API server takes it", "the CRD is not installed", func() error {
		_, err := r.kubectl(ctx, "", "apply", "--server-side", "--force-conflicts", "-f", crd)
		if err != nil {
			return err
		}
		_, err = r.kubectl(ctx, "", "wait", "--for=condition=Established", "crd/gordons.operator.prgcont.cz", "--timeout=1m")
		return err
	})
	r.check("task: the CRD takes the workshop's Gordon, spec.gordon.replicas, and refuses a negative count", func() error {
		strict := []string{"create", "--dry-run=server", "--validate=strict", "-n", "default", "-f", "-"}
		if _, err := r.kubectl(ctx, gordonYAML, strict...); err != nil {
			return err
		}
		negative := gordonYAML[:len(gordonYAML)-len("3\n")] + "-1\n"
		return r.refused(ctx, negative, "spec.gordon.replicas", strict...)
	})
	roles := filepath.Join(r.code, "config", "rbac", "role.yaml")
	r.check("task: its RBAC, "+roles+" (make manifests, from the +kubebuilder:rbac markers), lets it list, watch, create and delete pods", func() error {
		return grantsPods(filepath.Join(r.root, roles))
	})

	g := gordonCheck{r: r, ns: kubebuilderNamespace}
	op := r.runOperator(ctx, kubebuilderNamespace, "a Gordon of 3 replicas", gordonYAML, g.idle(ctx),
		operatorBuild{dir: r.code, pkg: "./cmd", env: []string{"GOWORK=off"}})
	defer op.close()
	g.run(ctx, true)
}

// grantsPods returns nil when the ClusterRole in file lets its holder list,
// watch, create and delete pods.
func grantsPods(file string) error {
	text, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var role rbacv1.ClusterRole
	if err := yaml.Unmarshal(text, &role); err != nil {
		return err
	}
	granted := map[string]bool{}
	for _, rule := range role.Rules {
		if slices.Contains(rule.APIGroups, "") && (slices.Contains(rule.Resources, "pods") || slices.Contains(rule.Resources, "*")) {
			for _, v := range rule.Verbs {
				granted[v] = true
			}
		}
	}
	var missing []string
	for _, v := range []string{"list", "watch", "create", "delete"} {
		if !granted[v] && !granted["*"] {
			missing = append(missing, v)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("it may not %v pods: add a marker // +kubebuilder:rbac:groups=\"\",resources=pods,verbs=... above Reconcile, and run make manifests", missing)
	}
	return nil
}
