// Package podsecurity builds security contexts that meet the "restricted" Pod
// Security Standard (https://kubernetes.io/docs/concepts/security/pod-security-standards/),
// so the operators' pods are admitted in namespaces that enforce it.
package podsecurity

import (
	corev1 "k8s.io/api/core/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
)

// Pod returns a restricted pod security context for an image whose process
// runs as uid. Volumes are group-owned by uid's group so the process can
// write them without running as root.
func Pod(uid int64) *corev1ac.PodSecurityContextApplyConfiguration {
	return corev1ac.PodSecurityContext().
		WithRunAsNonRoot(true).
		WithRunAsUser(uid).
		WithRunAsGroup(uid).
		WithFSGroup(uid).
		WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault))
}

// Container returns a restricted container security context: no privilege
// escalation and no Linux capabilities.
func Container() *corev1ac.SecurityContextApplyConfiguration {
	return corev1ac.SecurityContext().
		WithAllowPrivilegeEscalation(false).
		WithCapabilities(corev1ac.Capabilities().WithDrop("ALL"))
}
