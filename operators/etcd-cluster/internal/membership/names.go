package membership

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// MemberName is the name of the member with the given ordinal: the name of
// its pod, <cluster>-<ordinal>, which is also its etcd --name.
func MemberName(cluster string, ordinal int) string {
	return cluster + "-" + strconv.Itoa(ordinal)
}

// Ordinal parses the ordinal out of a member name of cluster. It reports false
// for a name the operator did not give: another cluster's, a person's, or an
// empty one.
func Ordinal(cluster, name string) (int, bool) {
	digits, ok := strings.CutPrefix(name, cluster+"-")
	if !ok || digits == "" || len(digits) > 9 || (len(digits) > 1 && digits[0] == '0') {
		return 0, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(digits)
	return n, err == nil
}

// InitialCluster is the --initial-cluster value for a member that joins the
// cluster (--initial-cluster-state=existing): every member, the joining one
// included, as name=peerURL. etcd refuses to start a joining member whose list
// does not match the cluster's own.
func InitialCluster(members []Member) string {
	var parts []string
	for _, m := range members {
		for _, u := range m.PeerURLs {
			parts = append(parts, m.Name+"="+u)
		}
	}
	return strings.Join(parts, ",")
}

// Addressing maps member names to the peer URLs they listen on, and back.
// The operator needs both directions because etcd knows an added member only
// by its peer URL until the member starts and tells its name.
type Addressing interface {
	// PeerURL is where the member named name listens for its peers.
	PeerURL(name string) string
	// Name is the member name that PeerURL maps to peerURL, or "" when the
	// URL is not one of this cluster's.
	Name(peerURL string) string
}

// HeadlessService is the Addressing of members that run as pods behind a
// headless Service: the peer URL of pod p is
// <scheme>://p.<service>.<namespace>.svc:<port>.
type HeadlessService struct {
	// Service is the name of the headless Service that gives each pod a DNS name.
	Service string
	// Namespace is the namespace of the Service and the pods.
	Namespace string
	// Port is the peer port; 2380 when zero.
	Port int
	// ClientPort is the client port; 2379 when zero.
	ClientPort int
	// Scheme is "http" or "https" (peer TLS); "http" when empty.
	Scheme string
}

// PeerURL implements Addressing.
func (h HeadlessService) PeerURL(name string) string {
	return fmt.Sprintf("%s://%s.%s:%d", h.scheme(), name, h.domain(), h.port())
}

// ClientURL is where the member named name serves clients: the client port
// of the same host name.
func (h HeadlessService) ClientURL(name string) string {
	port := h.ClientPort
	if port == 0 {
		port = 2379
	}
	return fmt.Sprintf("%s://%s.%s:%d", h.scheme(), name, h.domain(), port)
}

// Name implements Addressing.
func (h HeadlessService) Name(peerURL string) string {
	u, err := url.Parse(peerURL)
	if err != nil || u.Scheme != h.scheme() || u.Port() != strconv.Itoa(h.port()) {
		return ""
	}
	name, ok := strings.CutSuffix(u.Hostname(), "."+h.domain())
	if !ok || name == "" || strings.Contains(name, ".") {
		return ""
	}
	return name
}

func (h HeadlessService) domain() string { return h.Service + "." + h.Namespace + ".svc" }

func (h HeadlessService) port() int {
	if h.Port == 0 {
		return 2380
	}
	return h.Port
}

func (h HeadlessService) scheme() string {
	if h.Scheme == "" {
		return "http"
	}
	return h.Scheme
}
