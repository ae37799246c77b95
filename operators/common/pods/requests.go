package pods

import (
	"flag"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
)

// Requests are the CPU and memory an operand's container asks of its node.
// Without them the scheduler places a pod as if it used nothing, and under
// memory pressure the kubelet evicts it first (QoS class BestEffort).
type Requests struct {
	CPU, Memory resource.Quantity
}

// NewRequests parses cpu and memory ("100m", "256Mi"); for defaults, which
// are constants, so it panics on a bad one.
func NewRequests(cpu, memory string) Requests {
	return Requests{CPU: resource.MustParse(cpu), Memory: resource.MustParse(memory)}
}

// BindFlags registers --<name>-cpu-request and --<name>-memory-request on
// fs, defaulting to r's values; pods names the pods they are for in the
// help ("Database's server pod"). Zero requests nothing of that resource.
func (r *Requests) BindFlags(fs *flag.FlagSet, name, pods string) {
	for _, f := range []struct {
		flag, resource string
		q              *resource.Quantity
		example        string
	}{{"cpu", "CPU", &r.CPU, "250m or 1"}, {"memory", "Memory", &r.Memory, "256Mi or 1Gi"}} {
		fs.Func(name+"-"+f.flag+"-request", fmt.Sprintf("%s that each %s requests of its node, e.g. %s (default %s; 0 requests none).",
			f.resource, pods, f.example, f.q.String()), func(s string) error {
			q, err := resource.ParseQuantity(s)
			if err != nil {
				return fmt.Errorf("%q is not a quantity (%s): %w", s, f.example, err)
			}
			if q.Sign() < 0 {
				return fmt.Errorf("%s must not be negative", s)
			}
			*f.q = q
			return nil
		})
	}
}

// List is r as a container's requests; nil when r requests nothing.
func (r Requests) List() corev1.ResourceList {
	list := corev1.ResourceList{}
	if !r.CPU.IsZero() {
		list[corev1.ResourceCPU] = r.CPU
	}
	if !r.Memory.IsZero() {
		list[corev1.ResourceMemory] = r.Memory
	}
	if len(list) == 0 {
		return nil
	}
	return list
}

// Apply is r for a container's apply configuration; nil when r requests
// nothing.
func (r Requests) Apply() *corev1ac.ResourceRequirementsApplyConfiguration {
	list := r.List()
	if list == nil {
		return nil
	}
	return corev1ac.ResourceRequirements().WithRequests(list)
}
