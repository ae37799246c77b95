package main

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestRender(t *testing.T) {
	tests := []struct {
		name  string
		count int64
	}{
		{"obj", 2},
		{"other", 0},
		{"big", 100},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := Render(tc.name, tc.count)
			if err != nil {
				t.Fatal(err)
			}
			if len(objs) != 1 {
				t.Fatalf("rendered %d objects, want the Deployment only", len(objs))
			}
			var d appsv1.Deployment
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(objs[0].Object, &d); err != nil {
				t.Fatal(err)
			}
			if want := tc.name + "-demo-deploy"; d.Name != want {
				t.Errorf("name %s, want %s", d.Name, want)
			}
			if d.Spec.Replicas == nil || int64(*d.Spec.Replicas) != tc.count {
				t.Errorf("replicas %v, want %d", d.Spec.Replicas, tc.count)
			}
			// Two Samples never select each other's pods.
			if d.Spec.Selector.MatchLabels[instanceLabel] != tc.name || d.Spec.Template.Labels[instanceLabel] != tc.name {
				t.Errorf("selector %v, pod labels %v: want %s=%s in both", d.Spec.Selector.MatchLabels, d.Spec.Template.Labels, instanceLabel, tc.name)
			}
		})
	}
}
