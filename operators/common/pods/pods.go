// Package pods reads the state of a pod the way every operator here needs
// it: ready, ended for good, or stuck on something only a person can fix.
package pods

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Ready reports whether the pod's Ready condition is true.
func Ready(pod *corev1.Pod) bool { return Condition(pod, corev1.PodReady) }

// Condition reports whether the pod's condition typ is true (Ready,
// ContainersReady, ...).
func Condition(pod *corev1.Pod, typ corev1.PodConditionType) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == typ {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// KeepStatus clears pod's spec but for the node it runs on, keeping its
// metadata and status: what the functions of this package read. It trims
// (manager.Trim) the cached copies of pods an operator reads the state of
// but never writes, such as its Deployment's or its Jobs'.
func KeepStatus(pod *corev1.Pod) { pod.Spec = corev1.PodSpec{NodeName: pod.Spec.NodeName} }

// Ended reports whether the pod's containers stopped for good: it will never
// run again, and only a new pod can take its place.
func Ended(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded
}

// stuckReasons are the waiting reasons of a container that the kubelet
// retries forever without a change to the pod or to what it refers to: the
// image cannot be pulled or does not exist, the container's configuration
// (a Secret or ConfigMap key, say) is missing, or the process keeps exiting.
var stuckReasons = map[string]bool{
	"ErrImagePull":               true,
	"ImagePullBackOff":           true,
	"InvalidImageName":           true,
	"ErrImageNeverPull":          true,
	"CreateContainerConfigError": true,
	"CreateContainerError":       true,
	"CrashLoopBackOff":           true,
}

// imageReasons are the waiting reasons of a container whose image the node
// does not have and cannot get: it never ran.
var imageReasons = map[string]bool{"ErrImagePull": true, "ImagePullBackOff": true, "InvalidImageName": true, "ErrImageNeverPull": true}

// NeverRan reports whether a container of the pod waits for an image the
// node cannot get: the pod never ran what its spec says, and replacing it
// stops nothing that runs.
func NeverRan(pod *corev1.Pod) bool {
	for _, s := range pod.Status.ContainerStatuses {
		if w := s.State.Waiting; w != nil && imageReasons[w.Reason] && s.LastTerminationState.Terminated == nil {
			return true
		}
	}
	return false
}

// Stuck reports whether a container of the pod waits for something only a
// person can fix, with the kubelet's reason (ImagePullBackOff,
// CrashLoopBackOff, ...) and a message that names the container and says
// what the kubelet said. Init containers come first: the others wait for
// them.
func Stuck(pod *corev1.Pod) (reason, message string, stuck bool) {
	for _, statuses := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, s := range statuses {
			w := s.State.Waiting
			if w == nil || !stuckReasons[w.Reason] {
				continue
			}
			message = fmt.Sprintf("container %s of pod %s: %s", s.Name, pod.Name, w.Reason)
			if w.Message != "" {
				message += ": " + w.Message
			}
			if w.Reason == "CrashLoopBackOff" && s.LastTerminationState.Terminated != nil {
				t := s.LastTerminationState.Terminated
				message += fmt.Sprintf(" (last exit code %d, %d restarts)", t.ExitCode, s.RestartCount)
			}
			return w.Reason, message, true
		}
	}
	return "", "", false
}

// NotReadySince returns when the pod's Ready condition last went False, for
// a pod that runs (phase Running) and is not ready: its containers started
// and their readiness probes fail, or a container keeps restarting. ok is
// false for any other pod.
func NotReadySince(pod *corev1.Pod) (since time.Time, ok bool) {
	if pod.Status.Phase != corev1.PodRunning {
		return time.Time{}, false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.LastTransitionTime.Time, c.Status != corev1.ConditionTrue
		}
	}
	return time.Time{}, false
}
