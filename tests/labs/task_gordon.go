package labs

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// gordonNamespace is where the checks of lab 7's tasks run the learner's
// operator on a Gordon of their own.
const gordonNamespace = "lab-07-tasks"

// gordonTasks checks lab 7's three tasks (labs/tasks/gordon): it builds the
// learner's operator, runs it with -v=6 as the lab does, and does what the
// workshop's hints say: a Gordon of three, a pod deleted, the Gordon
// deleted; then it reads the operator's log against calls.txt.
func gordonTasks(ctx context.Context, r *taskRun) {
	g := gordonCheck{r: r, ns: gordonNamespace}
	op := r.runOperator(ctx, gordonNamespace, "a Gordon of 3 replicas", gordonYAML, g.idle(ctx),
		operatorBuild{dir: ".", pkg: "./" + r.code, args: []string{"-v=6"}})
	defer op.close()
	g.run(ctx, false)

	op.stop() // its log is whole
	if op.ran {
		r.blocked = "" // its log tells what it did, whatever went wrong
	}
	calls := filepath.Join(r.code, "calls.txt")
	r.check("task 1, the API calls: "+calls+" says what each kind of request your operator made is for", func() error {
		return explained(r.root, calls, op.log)
	})
}

// gordonYAML is the workshop's Gordon.
const gordonYAML = `apiVersion: operator.prgcont.cz/v1
kind: Gordon
metadata:
  name: gordoncluster
spec:
  gordon:
    replicas: 3
`

// A gordonCheck checks a learner's gordon operator (labs 7 and 10) on the
// workshop's Gordon, gordoncluster, in namespace ns.
type gordonCheck struct {
	r  *taskRun
	ns string
}

// idle is runOperator's idle: no pod may appear before the learner's
// operator runs.
func (g gordonCheck) idle(ctx context.Context) func() error {
	return func() error {
		pods, err := g.pods(ctx)
		if err == nil && len(pods) > 0 {
			err = errors.New("pods appeared")
		}
		return err
	}
}

// run checks that the Gordon gets its 3 pods (a task's check when task,
// else the starter's work), that a pod deleted is replaced (the workshop's
// checker) and that the pods go with the Gordon (its delete()).
func (g gordonCheck) run(ctx context.Context, task bool) {
	r := g.r
	name := "your operator gives the Gordon of 3 replicas 3 pods, listed in its status (the starter does)"
	if task {
		name = "task: your operator gives the Gordon of 3 replicas 3 pods, listed in its status.pods, within a minute"
	}
	r.gate(name, "the Gordon never got its 3 pods", func() error {
		return until(ctx, time.Minute, func() error { return g.threePods(ctx, "") })
	})

	r.check("task 3, the checker: a pod deleted is replaced within 20 seconds, and the status lists the new one", func() error {
		pods, err := g.pods(ctx)
		if err != nil {
			return err
		}
		victim := pods[0].Name
		if _, err := r.kubectl(ctx, "", "delete", "pod", "-n", g.ns, victim, "--timeout=1m"); err != nil {
			return err
		}
		return until(ctx, 20*time.Second, func() error { return g.threePods(ctx, victim) })
	})

	r.check("task 2, delete: the Gordon deleted, its pods go (within 10 seconds, 60 when they name an owner)", func() error {
		pods, err := g.pods(ctx)
		if err != nil {
			return err
		}
		if len(pods) == 0 {
			return errors.New("the Gordon has no pod to delete with it")
		}
		// The garbage collector may take a while to delete pods that name
		// the Gordon as their owner (up to half a minute, the first time,
		// for a new resource); pods that name no owner are deleted by the
		// operator or never.
		limit := 10 * time.Second
		for _, p := range pods {
			if len(p.OwnerReferences) > 0 {
				limit = time.Minute
			}
		}
		if _, err := r.kubectl(ctx, "", "delete", "gordon", "-n", g.ns, "gordoncluster", "--timeout=1m"); err != nil {
			return err
		}
		return until(ctx, limit, func() error {
			pods, err := g.pods(ctx)
			if err != nil {
				return err
			}
			if len(pods) > 0 {
				return fmt.Errorf("the Gordon is gone, and these pods are still there: %s", strings.Join(podNames(pods), " "))
			}
			return nil
		})
	})
}

// pods returns the pods of the check's namespace that are not being
// deleted.
func (g gordonCheck) pods(ctx context.Context) ([]corev1.Pod, error) {
	out, err := g.r.kubectl(ctx, "", "get", "pods", "-n", g.ns, "-o", "json")
	if err != nil {
		return nil, err
	}
	var list corev1.PodList
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		return nil, fmt.Errorf("kubectl get pods -o json: %w", err)
	}
	return slices.DeleteFunc(list.Items, func(p corev1.Pod) bool { return p.DeletionTimestamp != nil }), nil
}

func podNames(pods []corev1.Pod) []string {
	var names []string
	for _, p := range pods {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	return names
}

// threePods returns nil when the check's namespace has 3 pods, none of them
// gone (the pod the check deleted), and the Gordon's status lists them.
func (g gordonCheck) threePods(ctx context.Context, gone string) error {
	pods, err := g.pods(ctx)
	if err != nil {
		return err
	}
	names := podNames(pods)
	if len(names) != 3 || slices.Contains(names, gone) {
		return fmt.Errorf("the namespace's pods: %q", names)
	}
	out, err := g.r.kubectl(ctx, "", "get", "gordon", "-n", g.ns, "gordoncluster", "-o", "jsonpath={.status.pods}")
	if err != nil {
		return err
	}
	var listed []string
	if out != "" {
		if err := json.Unmarshal([]byte(out), &listed); err != nil {
			return fmt.Errorf("status.pods: %w", err)
		}
	}
	slices.Sort(listed)
	if !slices.Equal(listed, names) {
		return fmt.Errorf("the pods are %q, the Gordon's status.pods lists %q", names, listed)
	}
	return nil
}

// requestLine finds a request in a log of client-go at -v=6: its verb and
// its URL, without the query.
var requestLine = regexp.MustCompile(`"verb": "([A-Z]+)", "url": "([^"?]*)`)

// explained returns nil when the file calls (from root) explains every kind of request
// (verb and path, names left out) the log of the learner's operator shows.
func explained(root, calls, log string) error {
	made, err := requestsIn(fromRoot(root, log))
	if err != nil {
		return err
	}
	if len(made) == 0 {
		return fmt.Errorf("your operator's log, %s, shows no request: was it run with -v=6?", log)
	}
	text, err := os.ReadFile(filepath.Join(root, calls))
	if err != nil {
		return err
	}
	told, err := parseCalls(calls, string(text))
	if err != nil {
		return err
	}
	missing := 0
	for k := range made {
		if !told[k] {
			missing++
		}
	}
	if missing > 0 {
		return fmt.Errorf("your operator made %d kinds of request in this check, and %s explains %d of them.\nIts log is %s: each line with a \"verb\" and a \"url\" is a request; write a line for each kind (the same verb and path, names aside)",
			len(made), calls, len(made)-missing, log)
	}
	return nil
}

// requestsIn returns the kinds of request (call's keys) a log shows.
func requestsIn(log string) (map[string]bool, error) {
	f, err := os.Open(log)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	made := map[string]bool{}
	s := bufio.NewScanner(f)
	s.Buffer(nil, 1<<20)
	for s.Scan() {
		m := requestLine.FindStringSubmatch(s.Text())
		if m == nil {
			continue
		}
		u, err := url.Parse(m[2])
		if err != nil {
			continue
		}
		made[call(m[1], u.Path)] = true
	}
	return made, s.Err()
}

// parseCalls reads a calls.txt: a line per request, its verb, its path and
// what it is for; '#' starts a comment line. It returns the calls' keys.
func parseCalls(name, text string) (map[string]bool, error) {
	told := map[string]bool{}
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 3 {
			return nil, fmt.Errorf("%s:%d: %q: a line is a verb, a path, and what the request is for", name, i+1, line)
		}
		verb, path := strings.ToUpper(f[0]), strings.TrimSuffix(f[1], ":")
		if !strings.HasPrefix(path, "/") {
			return nil, fmt.Errorf("%s:%d: %q: the path starts with /, as /api/v1/namespaces/{namespace}/pods", name, i+1, line)
		}
		if u, err := url.Parse(path); err == nil {
			path = u.Path // a query the learner copied is no part of the kind
		}
		told[call(verb, path)] = true
	}
	return told, nil
}

// call is the key of a request: its verb and its path, with the names of
// the namespace and of the object in it replaced by {namespace} and {name},
// so that a request for one pod and one for another are of one kind.
func call(verb, path string) string {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	n := 0 // the segments before the resource's: api/v1, apis/group/version
	switch {
	case len(segs) >= 2 && segs[0] == "api":
		n = 2
	case len(segs) >= 3 && segs[0] == "apis":
		n = 3
	}
	if n == 0 || len(segs) == n { // /api, /apis, discovery of a group version
		return verb + " /" + strings.Join(segs, "/")
	}
	out, rest := slices.Clone(segs[:n]), segs[n:]
	if len(rest) > 2 && rest[0] == "namespaces" {
		out, rest = append(out, "namespaces", "{namespace}"), rest[2:]
	}
	out = append(out, rest[0])
	if len(rest) > 1 {
		out = append(out, "{name}")
		out = append(out, rest[2:]...)
	}
	return verb + " /" + strings.Join(out, "/")
}
