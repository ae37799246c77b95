// Command pause is the pod sandbox's process, like registry.k8s.io/pause: it
// holds the pod's namespaces open and does nothing else. As PID 1 of a pod
// that shares its process namespace it reaps orphans; SIGINT or SIGTERM end it.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sig {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
