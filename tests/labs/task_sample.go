package labs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// sampleNamespace is where the checks of lab 8's tasks run the learner's
// operator, and apply their kustomization.
const sampleNamespace = "lab-08-tasks"

// sampleYAML is the training's Sample, obj, of count 2.
const sampleYAML = `apiVersion: nuvolaris.org/v1
kind: Sample
metadata:
  name: obj
spec:
  count: 2
`

// sampleTasks checks lab 8's operator task (labs/tasks/sample): the
// learner's operator gives the Sample obj its Deployment, obj-demo-deploy,
// with count replicas, follows a new count, reports the ready pods, and the
// Deployment goes with the Sample.
func sampleTasks(ctx context.Context, r *taskRun) {
	op := r.runOperator(ctx, sampleNamespace, "the training's Sample obj, of count 2", sampleYAML, func() error {
		return noDeployment(ctx, r, sampleNamespace, "obj-demo-deploy", "deployment obj-demo-deploy appeared")
	}, operatorBuild{dir: ".", pkg: "./" + r.code, args: []string{"-v=6"}})
	defer op.close()

	replicas := func(want int32) func() error {
		return func() error {
			d, err := deploymentIn(ctx, r, sampleNamespace, "obj-demo-deploy")
			if err != nil {
				return err
			}
			if d.Spec.Replicas == nil || *d.Spec.Replicas != want {
				return fmt.Errorf("deployment obj-demo-deploy has spec.replicas %v, not %d", ptrString(d.Spec.Replicas), want)
			}
			if c := controllerOf(d); c != "Sample/obj" {
				return fmt.Errorf("deployment obj-demo-deploy has %d replicas, and its controlling owner is %q, not the Sample obj (Sample/obj): the garbage collector will not delete it with its Sample", want, c)
			}
			return nil
		}
	}
	ready := func(want int) func() error {
		return func() error {
			out, err := r.kubectl(ctx, "", "get", "sample", "-n", sampleNamespace, "obj", "-o", "jsonpath={.status.readyReplicas}")
			if err != nil {
				return err
			}
			if strings.TrimSpace(out) != fmt.Sprint(want) {
				return fmt.Errorf("the Sample's status.readyReplicas is %q, not %d", out, want)
			}
			return nil
		}
	}
	r.gate("task: the Sample obj of count 2 gets its own Deployment, obj-demo-deploy, with 2 replicas, owned by the Sample, within 30 seconds", "the Sample obj never got its Deployment", func() error {
		return until(ctx, 30*time.Second, replicas(2))
	})
	r.check("task: its status.readyReplicas says 2 once the pods are ready, within 60 seconds", func() error {
		return until(ctx, time.Minute, ready(2))
	})
	r.check("task: a new count, 3, is followed: 3 replicas, and the status says 3 ready, within 60 seconds", func() error {
		if _, err := r.kubectl(ctx, "", "patch", "sample", "-n", sampleNamespace, "obj", "--type=merge", "-p", `{"spec": {"count": 3}}`); err != nil {
			return err
		}
		if err := until(ctx, 30*time.Second, replicas(3)); err != nil {
			return err
		}
		return until(ctx, 30*time.Second, ready(3))
	})
	r.check("task: the Sample deleted, its Deployment goes within 60 seconds", func() error {
		// A Deployment that was never there does not go.
		if _, err := deploymentIn(ctx, r, sampleNamespace, "obj-demo-deploy"); err != nil {
			return err
		}
		if _, err := r.kubectl(ctx, "", "delete", "sample", "-n", sampleNamespace, "obj", "--timeout=1m"); err != nil {
			return err
		}
		return until(ctx, time.Minute, func() error {
			return noDeployment(ctx, r, sampleNamespace, "obj-demo-deploy", "the Sample is gone, and deployment obj-demo-deploy is still there")
		})
	})
}

// kustomizePatchTasks checks lab 8's kustomize task
// (labs/tasks/kustomize-patch): the learner's kustomization patches the
// training's demo-deploy to 2 replicas, and applies.
func kustomizePatchTasks(ctx context.Context, r *taskRun) {
	r.check("demo-deployment.yaml is the training's, with 1 replica: a patch changes it, not an edit", func() error {
		text, err := os.ReadFile(filepath.Join(r.root, r.code, "demo-deployment.yaml"))
		if err != nil {
			return err
		}
		var d appsv1.Deployment
		if err := yaml.Unmarshal(text, &d); err != nil {
			return err
		}
		if d.Name != "demo-deploy" || d.Spec.Replicas == nil || *d.Spec.Replicas != 1 {
			return fmt.Errorf("it is Deployment %q with %s replicas: take the starter's back (labs/tasks/kustomize-patch/starter/demo-deployment.yaml)", d.Name, ptrString(d.Spec.Replicas))
		}
		return nil
	})
	var rendered string
	r.gate("kubectl kustomize "+r.code+" renders it", "kubectl kustomize fails", func() error {
		var err error
		rendered, err = r.kubectl(ctx, "", "kustomize", r.code)
		return err
	})
	r.check("task: the kustomization lists a patch of its own", func() error {
		text, err := os.ReadFile(filepath.Join(r.root, r.code, "kustomization.yaml"))
		if err != nil {
			return err
		}
		var k struct {
			Patches               []any `json:"patches"`
			PatchesStrategicMerge []any `json:"patchesStrategicMerge"`
			PatchesJSON6902       []any `json:"patchesJson6902"`
		}
		if err := yaml.Unmarshal(text, &k); err != nil {
			return err
		}
		if len(k.Patches)+len(k.PatchesStrategicMerge)+len(k.PatchesJSON6902) == 0 {
			return errors.New("kustomization.yaml has no patches: list yours under patches:, as - path: patch.yaml")
		}
		return nil
	})
	r.gate("task: what it renders is demo-deploy with 2 replicas", "it does not render demo-deploy with 2 replicas", func() error {
		var d appsv1.Deployment
		if err := yaml.Unmarshal([]byte(rendered), &d); err != nil {
			return fmt.Errorf("what kubectl kustomize printed is not one Deployment: %w", err)
		}
		if d.Kind != "Deployment" || d.Name != "demo-deploy" || d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
			return fmt.Errorf("it renders %s %q with %s replicas", d.Kind, d.Name, ptrString(d.Spec.Replicas))
		}
		return nil
	})
	r.check("task: kubectl apply -k "+r.code+" makes demo-deploy run 2 pods (in namespace "+sampleNamespace+", within 60 seconds)", func() error {
		if err := r.freshNamespace(ctx, sampleNamespace); err != nil {
			return err
		}
		defer r.dropNamespace(sampleNamespace)
		if _, err := r.kubectl(ctx, "", "apply", "-n", sampleNamespace, "-k", r.code); err != nil {
			return err
		}
		return until(ctx, time.Minute, func() error {
			d, err := deploymentIn(ctx, r, sampleNamespace, "demo-deploy")
			if err != nil {
				return err
			}
			if d.Status.ReadyReplicas != 2 {
				return fmt.Errorf("deployment demo-deploy has %d ready pods, not 2", d.Status.ReadyReplicas)
			}
			return nil
		})
	})
}

// errNotFound is what deploymentIn returns for a Deployment that does not
// exist.
var errNotFound = errors.New("not found")

// deploymentIn returns the Deployment name of namespace ns, or errNotFound.
func deploymentIn(ctx context.Context, r *taskRun, ns, name string) (*appsv1.Deployment, error) {
	out, err := r.kubectl(ctx, "", "get", "deployment", "-n", ns, name, "-o", "json", "--ignore-not-found")
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(out) == "" {
		return nil, fmt.Errorf("deployment %s: %w", name, errNotFound)
	}
	var d appsv1.Deployment
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		return nil, fmt.Errorf("kubectl get deployment %s -o json: %w", name, err)
	}
	return &d, nil
}

// noDeployment returns nil when namespace ns has no Deployment name, the
// error there otherwise: there, when it has one.
func noDeployment(ctx context.Context, r *taskRun, ns, name, there string) error {
	_, err := deploymentIn(ctx, r, ns, name)
	switch {
	case err == nil:
		return errors.New(there)
	case errors.Is(err, errNotFound):
		return nil
	}
	return err
}

// controllerOf says which object controls d: Kind/name, or "" for none.
func controllerOf(d *appsv1.Deployment) string {
	if ref := metav1.GetControllerOf(d); ref != nil {
		return ref.Kind + "/" + ref.Name
	}
	return ""
}

func ptrString(p *int32) string {
	if p == nil {
		return "no"
	}
	return fmt.Sprint(*p)
}
