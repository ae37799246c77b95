package scripts

import (
	"os/exec"
	"syscall"
)

// setDeathSignal has the kernel kill the server if the test binary dies
// without stopping it (a timeout, a kill), so no mariadbd outlives a run.
func setDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
