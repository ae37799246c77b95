// Command coredns is CoreDNS v1.13.1 (the version go.mod pins) with the
// plugins a cluster's DNS uses: those of the Corefile scripts/node.sh
// writes, and those of kind's and kubeadm's default Corefile (prometheus,
// loadbalance), plus log. CoreDNS's own main links every plugin, and its
// cloud providers' SDKs took minutes of a first run to compile.
package main

import (
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/metrics"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
)

func main() {
	coremain.Run()
}
