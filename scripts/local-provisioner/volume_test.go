package main

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestVolumeForClaim(t *testing.T) {
	rwo := []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	claim := func(mutate func(*corev1.PersistentVolumeClaim)) *corev1.PersistentVolumeClaim {
		c := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "data-db-0", UID: "1234"},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: rwo,
				Resources: corev1.VolumeResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
				},
			},
		}
		if mutate != nil {
			mutate(c)
		}
		return c
	}
	retain := corev1.PersistentVolumeReclaimRetain
	block := corev1.PersistentVolumeBlock
	nodeAffinity := func(node string) *corev1.VolumeNodeAffinity {
		return &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
		}}}}
	}

	tests := []struct {
		name    string
		claim   *corev1.PersistentVolumeClaim
		class   func(*storagev1.StorageClass)
		node    string
		realDir string
		check   func(t *testing.T, pv *corev1.PersistentVolume)
		wantErr bool
	}{
		{
			name:  "default class on a selected node",
			claim: claim(nil),
			node:  "kwok-node-0",
			check: func(t *testing.T, pv *corev1.PersistentVolume) {
				if pv.Name != "pvc-1234" {
					t.Errorf("name = %q, want pvc-1234", pv.Name)
				}
				if got := pv.Annotations["pv.kubernetes.io/provisioned-by"]; got != Provisioner {
					t.Errorf("provisioned-by = %q, want %q", got, Provisioner)
				}
				if got := pv.Spec.Capacity[corev1.ResourceStorage]; got.Cmp(resource.MustParse("1Gi")) != 0 {
					t.Errorf("capacity = %s, want 1Gi", got.String())
				}
				if pv.Spec.HostPath == nil || pv.Spec.HostPath.Path != "/tmp/workshop-volumes/pvc-1234" {
					t.Errorf("hostPath = %+v, want /tmp/workshop-volumes/pvc-1234", pv.Spec.HostPath)
				}
				want := corev1.ObjectReference{APIVersion: "v1", Kind: "PersistentVolumeClaim", Namespace: "shop", Name: "data-db-0", UID: "1234"}
				if pv.Spec.ClaimRef == nil || *pv.Spec.ClaimRef != want {
					t.Errorf("claimRef = %+v, want %+v", pv.Spec.ClaimRef, want)
				}
				if pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete {
					t.Errorf("reclaim policy = %s, want Delete", pv.Spec.PersistentVolumeReclaimPolicy)
				}
				if pv.Spec.StorageClassName != "standard" {
					t.Errorf("storageClassName = %q, want standard", pv.Spec.StorageClassName)
				}
				if !equality.Semantic.DeepEqual(pv.Spec.AccessModes, rwo) {
					t.Errorf("access modes = %v, want %v", pv.Spec.AccessModes, rwo)
				}
				if !equality.Semantic.DeepEqual(pv.Spec.NodeAffinity, nodeAffinity("kwok-node-0")) {
					t.Errorf("node affinity = %+v, want kwok-node-0", pv.Spec.NodeAffinity)
				}
			},
		},
		{
			name:  "immediate binding has no node affinity",
			claim: claim(nil),
			class: func(c *storagev1.StorageClass) {
				mode := storagev1.VolumeBindingImmediate
				c.VolumeBindingMode = &mode
			},
			check: func(t *testing.T, pv *corev1.PersistentVolume) {
				if pv.Spec.NodeAffinity != nil {
					t.Errorf("node affinity = %+v, want none", pv.Spec.NodeAffinity)
				}
			},
		},
		{
			name: "access modes and volume mode come from the claim",
			claim: claim(func(c *corev1.PersistentVolumeClaim) {
				c.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany, corev1.ReadOnlyMany}
				c.Spec.VolumeMode = &block
			}),
			node: "n",
			check: func(t *testing.T, pv *corev1.PersistentVolume) {
				if len(pv.Spec.AccessModes) != 2 || pv.Spec.AccessModes[0] != corev1.ReadWriteMany {
					t.Errorf("access modes = %v, want [ReadWriteMany ReadOnlyMany]", pv.Spec.AccessModes)
				}
				if pv.Spec.VolumeMode == nil || *pv.Spec.VolumeMode != block {
					t.Errorf("volume mode = %v, want Block", pv.Spec.VolumeMode)
				}
			},
		},
		{
			name:  "reclaim policy comes from the class",
			claim: claim(nil),
			class: func(c *storagev1.StorageClass) { c.ReclaimPolicy = &retain },
			node:  "n",
			check: func(t *testing.T, pv *corev1.PersistentVolume) {
				if pv.Spec.PersistentVolumeReclaimPolicy != retain {
					t.Errorf("reclaim policy = %s, want Retain", pv.Spec.PersistentVolumeReclaimPolicy)
				}
			},
		},
		{
			name:    "real node: a local volume in its directory, pinned to the node",
			claim:   claim(nil),
			node:    "real-node",
			realDir: "/root/.kwok/clusters/workshop/volumes",
			check: func(t *testing.T, pv *corev1.PersistentVolume) {
				if pv.Spec.HostPath != nil {
					t.Errorf("hostPath = %+v, want none", pv.Spec.HostPath)
				}
				if pv.Spec.Local == nil || pv.Spec.Local.Path != "/root/.kwok/clusters/workshop/volumes/pvc-1234" {
					t.Errorf("local = %+v, want path /root/.kwok/clusters/workshop/volumes/pvc-1234", pv.Spec.Local)
				}
				if !equality.Semantic.DeepEqual(pv.Spec.NodeAffinity, nodeAffinity("real-node")) {
					t.Errorf("node affinity = %+v, want real-node", pv.Spec.NodeAffinity)
				}
			},
		},
		{
			name:    "real node without a selected node",
			claim:   claim(nil),
			realDir: "/volumes",
			wantErr: true,
		},
		{
			name:    "claim without a size",
			claim:   claim(func(c *corev1.PersistentVolumeClaim) { c.Spec.Resources.Requests = nil }),
			node:    "n",
			wantErr: true,
		},
		{
			name: "claim with a selector",
			claim: claim(func(c *corev1.PersistentVolumeClaim) {
				c.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"disk": "ssd"}}
			}),
			node:    "n",
			wantErr: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			class := storageClass()
			if tt.class != nil {
				tt.class(class)
			}
			pv, err := volumeForClaim(tt.claim, class, tt.node, tt.realDir)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if tt.check != nil {
				tt.check(t, pv)
			}
		})
	}
}
