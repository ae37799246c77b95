package main

import (
	"errors"
	"path"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// Provisioner is the name StorageClasses use to hand their claims to this program.
	Provisioner = "workshop.local/fake-hostpath"
	// StorageClassName is the default class the program creates, named like kind's.
	StorageClassName = "standard"
	// VolumeRoot holds one directory per volume of a fake node; nothing is
	// written there on a kwok cluster, the path only makes the volume look
	// like kind's.
	VolumeRoot = "/tmp/workshop-volumes"
	// RealNodeLabel marks the node that scripts/node.sh runs on this machine,
	// and kind's node: its volumes are real directories.
	RealNodeLabel = "workshop.local/real-node"

	annProvisionedBy = "pv.kubernetes.io/provisioned-by"
	annSelectedNode  = "volume.kubernetes.io/selected-node"
	annDefaultClass  = "storageclass.kubernetes.io/is-default-class"
	labelHostname    = "kubernetes.io/hostname"
)

// storageClass is the default class: WaitForFirstConsumer, as kind's, so a
// volume is pinned to the node the scheduler picked for the first pod.
func storageClass() *storagev1.StorageClass {
	mode := storagev1.VolumeBindingWaitForFirstConsumer
	reclaim := corev1.PersistentVolumeReclaimDelete
	return &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{
			Name:        StorageClassName,
			Annotations: map[string]string{annDefaultClass: "true"},
		},
		Provisioner:       Provisioner,
		ReclaimPolicy:     &reclaim,
		VolumeBindingMode: &mode,
	}
}

// volumeForClaim builds the volume that satisfies claim. node is the node the
// scheduler selected, empty for a class that binds immediately. The volume's
// claimRef pre-binds it, so kube-controller-manager binds it to claim only.
//
// realDir is empty for a fake node. For the real node it is the directory
// under which the volume's own directory is made on this machine, and the
// volume is a local volume there (the kubelet applies fsGroup to those, not
// to hostPath ones).
func volumeForClaim(claim *corev1.PersistentVolumeClaim, class *storagev1.StorageClass, node, realDir string) (*corev1.PersistentVolume, error) {
	if claim.Spec.Selector != nil {
		return nil, errors.New("claim has spec.selector, which dynamic provisioning cannot honour: remove it or create the volume by hand")
	}
	size, ok := claim.Spec.Resources.Requests[corev1.ResourceStorage]
	if !ok || size.IsZero() {
		return nil, errors.New("claim has no spec.resources.requests.storage: set the size it needs")
	}
	reclaim := corev1.PersistentVolumeReclaimDelete
	if class.ReclaimPolicy != nil {
		reclaim = *class.ReclaimPolicy
	}
	name := VolumeName(claim)
	hostPathType := corev1.HostPathDirectoryOrCreate
	source := corev1.PersistentVolumeSource{
		HostPath: &corev1.HostPathVolumeSource{Path: path.Join(VolumeRoot, name), Type: &hostPathType},
	}
	if realDir != "" {
		if node == "" {
			return nil, errors.New("a volume on the real node needs a node: use a WaitForFirstConsumer class")
		}
		source = corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: path.Join(realDir, name)}}
	}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{annProvisionedBy: Provisioner},
		},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:    corev1.ResourceList{corev1.ResourceStorage: size},
			AccessModes: claim.Spec.AccessModes,
			VolumeMode:  claim.Spec.VolumeMode,
			ClaimRef: &corev1.ObjectReference{
				APIVersion: "v1",
				Kind:       "PersistentVolumeClaim",
				Namespace:  claim.Namespace,
				Name:       claim.Name,
				UID:        claim.UID,
			},
			PersistentVolumeReclaimPolicy: reclaim,
			StorageClassName:              class.Name,
			MountOptions:                  class.MountOptions,
			PersistentVolumeSource:        source,
		},
	}
	if node != "" {
		pv.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
				Key: labelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{node},
			}}}},
		}}
	}
	return pv, nil
}

// VolumeName is the name of the volume of claim, and of its directory.
func VolumeName(claim *corev1.PersistentVolumeClaim) string { return "pvc-" + string(claim.UID) }
