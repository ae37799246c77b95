package labs

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
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
	// The operator runs as a user of its own, with the rights of the
	// ClusterRole make manifests wrote from its markers and nothing else:
	// its RBAC is exercised, not read.
	roles := filepath.Join(r.code, "config", "rbac", "role.yaml")
	var kubeconfig string
	r.gate("the check binds your RBAC, "+roles+" (make manifests, from the +kubebuilder:rbac markers), to the user "+kubebuilderUser+", as whom it runs your operator",
		"your RBAC is not bound", func() error {
			var err error
			if err = r.bindRole(ctx, filepath.Join(r.root, roles), kubebuilderUser); err != nil {
				return err
			}
			kubeconfig, err = r.kubeconfigAs(kubebuilderUser)
			return err
		})
	if kubeconfig != "" {
		defer func() { _ = os.RemoveAll(filepath.Dir(kubeconfig)) }()
	}

	g := gordonCheck{r: r, ns: kubebuilderNamespace}
	op := r.runOperator(ctx, kubebuilderNamespace, "a Gordon of 3 replicas", gordonYAML, g.idle(ctx),
		operatorBuild{dir: r.code, pkg: "./cmd", env: []string{"GOWORK=off"}, runEnv: []string{"KUBECONFIG=" + kubeconfig}})
	defer op.close()
	g.run(ctx, true)
	r.check("task: its RBAC allowed every request it made: its log, "+op.log+", shows none forbidden", func() error {
		return noneForbidden(fromRoot(r.root, op.log))
	})
}

// kubebuilderUser is who the learner's operator of lab 10 runs as.
const kubebuilderUser = "lab-10-operator"

// bindRole applies the ClusterRole in file, and binds it to user alone.
func (r *taskRun) bindRole(ctx context.Context, file, user string) error {
	text, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var role rbacv1.ClusterRole
	if err := yaml.Unmarshal(text, &role); err != nil {
		return err
	}
	if role.Kind != "ClusterRole" || role.Name == "" {
		return fmt.Errorf("%s holds a %s named %q, not the ClusterRole make manifests writes", file, role.Kind, role.Name)
	}
	if _, err := r.kubectl(ctx, "", "apply", "-f", file); err != nil {
		return err
	}
	binding := fmt.Sprintf(`apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: %s
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: %s}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: %s}
`, user, role.Name, user)
	_, err = r.kubectl(ctx, binding, "apply", "-f", "-")
	return err
}

// kubeconfigAs writes a kubeconfig that is the commands' own, its current
// context only, acting as user (impersonation, which the cluster's admin
// may do): the API server authorizes each request as user's. A $KUBECONFIG
// that lists several files is read as kubectl reads it, merged.
func (r *taskRun) kubeconfigAs(user string) (string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	for _, kv := range r.env {
		if v, ok := strings.CutPrefix(kv, "KUBECONFIG="); ok {
			rules.Precedence = filepath.SplitList(v)
		}
	}
	config, err := rules.Load()
	if err != nil {
		return "", err
	}
	if err := clientcmdapi.MinifyConfig(config); err != nil {
		return "", err
	}
	if err := clientcmdapi.FlattenConfig(config); err != nil {
		return "", err
	}
	for _, a := range config.AuthInfos {
		a.Impersonate = user
	}
	dir, err := os.MkdirTemp("", "lab-10-kubeconfig-")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "kubeconfig")
	return path, clientcmd.WriteToFile(*config, path)
}

// noneForbidden returns the lines of the operator's log at path that say
// the API server forbade a request, as an error.
func noneForbidden(path string) error {
	text, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var forbidden []string
	for _, l := range strings.Split(string(text), "\n") {
		if strings.Contains(l, "is forbidden") {
			forbidden = append(forbidden, l)
		}
	}
	if len(forbidden) == 0 {
		return nil
	}
	if len(forbidden) > 3 {
		forbidden = append(forbidden[:3], fmt.Sprintf("... and %d more", len(forbidden)-3))
	}
	return fmt.Errorf("add the rights it lacks as markers // +kubebuilder:rbac:groups=...,resources=...,verbs=... above Reconcile, and run make manifests:\n%s", strings.Join(forbidden, "\n"))
}
