//go:build !linux

package scripts

import "os/exec"

// setDeathSignal does nothing where there is no parent-death signal; the
// tests still stop the server at the end.
func setDeathSignal(*exec.Cmd) {}
