// Command gordon stands in for the prgcont workshop's prgcont/gordon:v1.0
// image. The workshop never says what its container does: the operator only
// creates, counts, lists and replaces gordon pods. This one says who it is
// and then runs until it is stopped, so a gordon pod on a real node stays
// Running and Ready, and `kubectl logs` shows a line.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	host, _ := os.Hostname()
	fmt.Printf("gordon %s: running; the operator keeps the count\n", host)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	s := <-sig
	fmt.Printf("gordon %s: %s, stopping\n", host, s)
}
