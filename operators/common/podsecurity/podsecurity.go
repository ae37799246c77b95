// Package podsecurity builds security contexts that meet the "restricted" Pod
// Security Standard (https://kubernetes.io/docs/concepts/security/pod-security-standards/),
// so the operators' pods are admitted in namespaces that enforce it. Each
// comes as a typed struct, for objects created with Create, and as an apply
// configuration, for objects sent with server-side apply.
package podsecurity

import (
	corev1 "k8s.io/api/core/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/utils/ptr"
)

// Pod returns a restricted pod security context for an image whose process
// runs as uid; volumes are group-owned by uid's group so the process can
// write them without running as root. uid nil is for images whose user is
// unknown: the pod then meets every rule but runAsNonRoot.
func Pod(uid *int64) *corev1.PodSecurityContext {
	sc := &corev1.PodSecurityContext{
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	if uid != nil {
		sc.RunAsNonRoot = ptr.To(true)
		sc.RunAsUser, sc.RunAsGroup, sc.FSGroup = uid, uid, uid
	}
	return sc
}

// Container returns a restricted container security context: no privilege
// escalation and no Linux capabilities.
func Container() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}

// PodApply is Pod for an image running as uid, as an apply configuration.
func PodApply(uid int64) *corev1ac.PodSecurityContextApplyConfiguration {
	return corev1ac.PodSecurityContext().
		WithRunAsNonRoot(true).
		WithRunAsUser(uid).
		WithRunAsGroup(uid).
		WithFSGroup(uid).
		WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault))
}

// ContainerApply is Container as an apply configuration.
func ContainerApply() *corev1ac.SecurityContextApplyConfiguration {
	return corev1ac.SecurityContext().
		WithAllowPrivilegeEscalation(false).
		WithCapabilities(corev1ac.Capabilities().WithDrop("ALL"))
}
