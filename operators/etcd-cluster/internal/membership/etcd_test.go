package membership

// Tests against real etcd servers, each on 127.0.0.1 with ports of its own:
// today's, run in this process with embed, or, with ETCD_RELEASE_BINARY set,
// processes of that etcd binary (bin/etcd-3.2.13, the workshops' release,
// bin/etcd-3.3.27 or bin/etcd-3.5.21: scripts/build-tools.sh etcd-3.2
// etcd-3.3 etcd-3.5, and make test-integration runs each), whose version
// then decides the
// operator's options, as the EtcdCluster's version does. They play the
// operator: the servers stand for the pods, a server's data directory for
// the pod's volume.

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/operator-workshops/workshop/operators/common/testenv"
	"github.com/operator-workshops/workshop/operators/etcd-cluster/internal/loopback"
)

const (
	key   = "/workshop/greeting"
	value = "kept through every change"
)

var (
	v36 = Options{Cluster: cl, Learners: true, MoveLeader: true}
	v32 = Options{Cluster: cl}
	// release is the etcd binary the members run; "" for today's etcd, in
	// this process.
	release = os.Getenv("ETCD_RELEASE_BINARY")
)

// server is a member's running etcd.
type server interface {
	// ready waits until the server serves, and says why not when it stops
	// first or takes over 20 seconds.
	ready() error
	// leads reports whether the server is its cluster's leader.
	leads() bool
	close()
}

// embedded is today's etcd, in this process.
type embedded struct{ *embed.Etcd }

func (e embedded) ready() error {
	select {
	case <-e.Server.ReadyNotify():
		return nil
	case err := <-e.Err():
		return fmt.Errorf("%s stopped: %w", e.Config().Name, err)
	case <-time.After(20 * time.Second):
		return fmt.Errorf("%s is not ready after 20s", e.Config().Name)
	}
}

func (e embedded) leads() bool { return e.Server.Leader() == e.Server.MemberID() }
func (e embedded) close()      { e.Close() }

// process is a server of the release binary, as a pod's container runs it.
type process struct {
	name, client, log string
	exited            chan error
	cmd               *exec.Cmd
}

func (p *process) status() (*clientv3.StatusResponse, error) {
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{p.client}, DialTimeout: time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, err
	}
	defer func() { _ = c.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return c.Status(ctx, p.client)
}

func (p *process) ready() error {
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		select {
		case err := <-p.exited:
			p.exited <- err
			b, _ := os.ReadFile(p.log)
			lines := strings.Split(strings.TrimSpace(string(b)), "\n")
			return fmt.Errorf("%s stopped (%w): %s", p.name, err, lines[len(lines)-1])
		default:
		}
		if _, err := p.status(); err == nil {
			return nil
		}
	}
	return fmt.Errorf("%s is not ready after 20s: see %s", p.name, p.log)
}

func (p *process) leads() bool {
	s, err := p.status()
	return err == nil && s.Leader == s.Header.MemberId
}

// close stops the server as the kubelet stops a container: SIGTERM, and
// SIGKILL after 10 seconds.
func (p *process) close() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.exited:
		p.exited <- err
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		p.exited <- <-p.exited
	}
}

// testCluster runs the members of the cluster named ex. It is the Addressing
// of the tests too: every member name gets a peer and a client port.
type testCluster struct {
	t       *testing.T
	root    string
	peers   map[string]string
	clients map[string]string
	servers map[string]server
	opts    Options         // what the operator does with the members' version
	spec    Options         // what the members' release supports, by etcd's changelogs
	lost    map[string]bool // data directory gone: the operator marks the member failed
	exec    *Executor
	lastLog string
	closing sync.WaitGroup
}

func newTestCluster(t *testing.T, size int) *testCluster {
	if testing.Short() {
		t.Skip("integration test: runs real etcd servers (run without -short)")
	}
	t.Helper()
	tc := &testCluster{
		t:       t,
		root:    t.TempDir(),
		peers:   map[string]string{},
		clients: map[string]string{},
		servers: map[string]server{},
		lost:    map[string]bool{},
	}
	t.Cleanup(tc.stopAll)
	var initial []string
	for i := range size {
		name := MemberName(cl, i)
		initial = append(initial, name+"="+tc.PeerURL(name))
	}
	var started []server
	for i := range size {
		started = append(started, tc.launch(MemberName(cl, i), strings.Join(initial, ","), embed.ClusterStateFlagNew))
	}
	for _, e := range started {
		tc.ready(e)
	}
	tc.exec = tc.executor()
	tc.opts, tc.spec = v36, v36
	if release != "" {
		s, err := started[0].(*process).status()
		if err != nil {
			t.Fatal(err)
		}
		if tc.opts, err = OptionsFor(cl, s.Version); err != nil {
			t.Fatal(err)
		}
		tc.spec = supports(t, s.Version)
		t.Logf("etcd %s (%s): the operator's options %+v", s.Version, release, tc.opts)
	}
	return tc
}

// supports is what etcd's changelogs say a release can do: MoveLeader from
// 3.3 (CHANGELOG-3.3), learners from 3.4 (CHANGELOG-3.4).
func supports(t *testing.T, version string) Options {
	switch {
	case strings.HasPrefix(version, "3.2."):
		return v32
	case strings.HasPrefix(version, "3.3."):
		return Options{Cluster: cl, MoveLeader: true}
	case strings.HasPrefix(version, "3.4."), strings.HasPrefix(version, "3.5."), strings.HasPrefix(version, "3.6."):
		return v36
	}
	t.Fatalf("etcd %s: which of learners and MoveLeader it has is not written down here", version)
	return Options{}
}

// executor is what a freshly started operator builds: it knows the client
// URLs of the pods, nothing else.
func (tc *testCluster) executor() *Executor {
	var endpoints []string
	for name := range tc.servers {
		endpoints = append(endpoints, tc.clients[name])
	}
	return &Executor{
		Client:       NewEtcd(clientv3.Config{DialTimeout: 2 * time.Second}),
		Addressing:   tc,
		Endpoints:    endpoints,
		ProbeTimeout: 500 * time.Millisecond,
	}
}

// PeerURL implements Addressing.
func (tc *testCluster) PeerURL(name string) string {
	if _, ok := tc.peers[name]; !ok {
		tc.peers[name] = "http://" + loopback.FreeAddr()
		tc.clients[name] = "http://" + loopback.FreeAddr()
	}
	return tc.peers[name]
}

// Name implements Addressing.
func (tc *testCluster) Name(peerURL string) string {
	for name, u := range tc.peers {
		if u == peerURL {
			return name
		}
	}
	return ""
}

// launch starts the server of member name, the way the operator starts its
// pod: --initial-cluster-state new for the first members, existing with the
// cluster's current member list for the ones added later. A data directory
// that exists is used as it is, and then the flags are ignored.
func (tc *testCluster) launch(name, initialCluster, state string) server {
	tc.t.Helper()
	e, err := tc.tryLaunch(name, initialCluster, state)
	if err != nil {
		tc.t.Fatalf("start %s: %v", name, err)
	}
	return e
}

// tryLaunch is launch that returns the server's refusal to start.
func (tc *testCluster) tryLaunch(name, initialCluster, state string) (server, error) {
	tc.closing.Wait() // a server of the same name may still be closing
	if release != "" {
		return tc.run(name, initialCluster, state)
	}
	cfg := embed.NewConfig()
	cfg.Name = name
	cfg.Dir = filepath.Join(tc.root, name)
	peer, _ := url.Parse(tc.PeerURL(name))
	client, _ := url.Parse(tc.clients[name])
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*peer}, []url.URL{*peer}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*client}, []url.URL{*client}
	cfg.InitialCluster = initialCluster
	cfg.ClusterState = state
	cfg.InitialClusterToken = filepath.Base(tc.root)
	// Short timeouts keep the suite fast; on a busy 2-core machine shorter
	// ones cause elections nobody asked for.
	cfg.TickMs, cfg.ElectionMs = 50, 500
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, err
	}
	tc.servers[name] = embedded{e}
	return embedded{e}, nil
}

// run starts the release binary for member name, with the flags tryLaunch
// gives embed, its output in the member's log beside its data directory.
func (tc *testCluster) run(name, initialCluster, state string) (server, error) {
	p := &process{name: name, client: tc.clients[name], log: filepath.Join(tc.root, name+".log"), exited: make(chan error, 1)}
	log, err := os.OpenFile(p.log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	defer func() { _ = log.Close() }()
	p.cmd = exec.Command(release, "--name", name, "--data-dir", filepath.Join(tc.root, name),
		"--listen-peer-urls", tc.PeerURL(name), "--initial-advertise-peer-urls", tc.PeerURL(name),
		"--listen-client-urls", p.client, "--advertise-client-urls", p.client,
		"--initial-cluster", initialCluster, "--initial-cluster-state", state,
		"--initial-cluster-token", filepath.Base(tc.root), "--heartbeat-interval", "50", "--election-timeout", "500")
	p.cmd.Stdout, p.cmd.Stderr = log, log
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { p.exited <- p.cmd.Wait() }()
	tc.servers[name] = p
	return p, nil
}

func (tc *testCluster) ready(e server) {
	tc.t.Helper()
	if err := e.ready(); err != nil {
		tc.t.Fatal(err)
	}
}

// start is the operator carrying out a Start step, and the kubelet
// restarting the member's container until it runs. A new member asks one of
// the others for the member list; one that has not applied the MemberAdd yet
// (a learner just promoted, say) answers without the new member, and the
// server exits with "member count is unequal". A pod would crash and be
// restarted; so is the server here.
func (tc *testCluster) start(step Step) {
	tc.t.Helper()
	name := step.Member.Name
	testenv.EventuallyWithin(tc.t, 40*time.Second, "member "+name+" to start", func(context.Context) error {
		e, err := tc.tryLaunch(name, step.InitialCluster, embed.ClusterStateFlagExisting)
		if err == nil {
			if err = e.ready(); err != nil {
				tc.stop(name, false)
			}
		}
		if err != nil {
			tc.t.Logf("start %s: %v; restarting it, as the kubelet would", name, err)
		}
		return err
	})
}

// stopAll stops the followers together, then the leader: a leader that
// stops hands its leadership to a follower first, and waits seconds for one
// that is stopping too.
func (tc *testCluster) stopAll() {
	var leader string
	for name, e := range tc.servers {
		if e.leads() {
			leader = name
			continue
		}
		tc.stopInBackground(name, false)
	}
	tc.closing.Wait()
	tc.stop(leader, false)
}

// stop stops the server of member name, as when its pod is deleted; with
// dropData its volume goes too.
func (tc *testCluster) stop(name string, dropData bool) {
	tc.stopInBackground(name, dropData)
	tc.closing.Wait()
}

// stopInBackground is stop without waiting for it: a server takes a second
// to close. launch waits for it.
func (tc *testCluster) stopInBackground(name string, dropData bool) {
	e := tc.servers[name]
	delete(tc.servers, name)
	tc.closing.Go(func() {
		if e != nil {
			e.close()
		}
		if dropData {
			if err := os.RemoveAll(filepath.Join(tc.root, name)); err != nil {
				tc.t.Error(err)
			}
		}
	})
}

// members is what the operator sees: etcd's view, plus Failed for members
// whose volume is gone.
func (tc *testCluster) members(ctx context.Context) ([]Member, error) {
	ms, err := tc.exec.Members(ctx)
	for i := range ms {
		ms[i].Failed = tc.lost[ms[i].Name]
	}
	return ms, err
}

// converge plays the operator's reconcile loop until Next says None, and
// returns the steps it took (each once, without the waits).
func (tc *testCluster) converge(desired int, opts Options) []string {
	tc.t.Helper()
	var steps []string
	deadline := time.Now().Add(45 * time.Second)
	var last Step
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		step, done := tc.reconcile(ctx, desired, opts)
		cancel()
		last = step
		if s := step.String(); step.Action != Wait && step.Action != Blocked && step.Action != None &&
			(len(steps) == 0 || steps[len(steps)-1] != s) {
			steps = append(steps, s)
		}
		if step.Action == None {
			return steps
		}
		if !done {
			time.Sleep(50 * time.Millisecond)
		}
	}
	tc.t.Fatalf("no convergence to %d members in 45s; steps %q, last %s", desired, steps, last)
	return nil
}

// reconcile is one pass of the operator: read, plan, act. It reports whether
// the step was carried out.
func (tc *testCluster) reconcile(ctx context.Context, desired int, opts Options) (Step, bool) {
	tc.t.Helper()
	ms, err := tc.members(ctx)
	if err != nil {
		tc.t.Logf("read the members: %v", err)
		return Step{Action: Wait}, false
	}
	step := Next(desired, ms, opts)
	switch step.Action {
	case None, Wait, Blocked:
		// A Blocked step here is an election in progress: every member
		// reports no leader for a moment. converge fails if it stays.
		return step, false
	case Start:
		tc.start(step)
		return step, true
	}
	res, err := tc.exec.Apply(ctx, step)
	if err != nil || res.Retry {
		if msg := fmt.Sprintf("%s: %s %v", step, res.Detail, err); msg != tc.lastLog {
			tc.t.Log(msg)
			tc.lastLog = msg
		}
		return step, false
	}
	if step.Action == Remove {
		// The operator deletes the pod and its volume: the data of a
		// removed member can never rejoin.
		tc.stopInBackground(step.Member.Name, true)
		delete(tc.lost, step.Member.Name)
	}
	return step, true
}

// applyUntilDone applies step until etcd stops asking for a retry.
func (tc *testCluster) applyUntilDone(step Step) Result {
	tc.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		res, err := tc.exec.Apply(ctx, step)
		cancel()
		if err != nil {
			tc.t.Fatalf("Apply(%s): %v", step, err)
		}
		if !res.Retry {
			return res
		}
		if time.Now().After(deadline) {
			tc.t.Fatalf("Apply(%s) still asks for a retry after 20s: %s", step, res.Detail)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// put writes the key through every member.
func (tc *testCluster) put() {
	tc.t.Helper()
	c := tc.client(tc.clients[MemberName(cl, 0)])
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Put(ctx, key, value); err != nil {
		tc.t.Fatal(err)
	}
}

// read checks that member name holds the key in its own copy (a
// serializable read is answered locally, learners included).
func (tc *testCluster) read(name string) {
	tc.t.Helper()
	c := tc.client(tc.clients[name])
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.Get(ctx, key, clientv3.WithSerializable())
	if err != nil {
		tc.t.Fatalf("read from %s: %v", name, err)
	}
	if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != value {
		tc.t.Fatalf("%s holds %v, want %s=%q", name, resp.Kvs, key, value)
	}
}

func (tc *testCluster) client(endpoint string) *clientv3.Client {
	tc.t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		tc.t.Fatal(err)
	}
	tc.t.Cleanup(func() { _ = c.Close() })
	return c
}

// memberIDs lists the members by name.
func (tc *testCluster) memberIDs() map[string]uint64 {
	tc.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ms, err := tc.members(ctx)
	if err != nil {
		tc.t.Fatal(err)
	}
	out := map[string]uint64{}
	for _, m := range ms {
		out[m.Name] = m.ID
	}
	return out
}

// adds is how the operator adds member name: as a learner, promoted once it
// has started, from etcd 3.4 on; as a voting member at once before.
func (tc *testCluster) adds(name string) []string {
	if tc.spec.Learners {
		return []string{"Add " + name + " as learner", "Start " + name, "Promote " + name}
	}
	return []string{"Add " + name, "Start " + name}
}

func elapsed(t *testing.T) func() {
	start := time.Now()
	return func() { t.Logf("%s took %v", t.Name(), time.Since(start).Round(10*time.Millisecond)) }
}

func TestEtcdScaleUpAndDownKeepsData(t *testing.T) {
	t.Parallel() // mostly waiting: etcd accepts a membership change only after 5s of good health
	defer elapsed(t)()
	tc := newTestCluster(t, 3)
	tc.put()

	got := tc.converge(5, tc.opts)
	want := append(tc.adds("ex-3"), tc.adds("ex-4")...)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("3 to 5: steps %q, want %q", got, want)
	}
	for i := range 5 {
		tc.read(MemberName(cl, i))
	}

	ids := tc.memberIDs()
	// From etcd 3.3 on, hand the leadership to ex-4, the first member a
	// scale down removes: the operator moves it off first. Before 3.3 the
	// leader, whichever it is, is removed as it is.
	want = []string{"Remove ex-4", "Remove ex-3"}
	if tc.spec.MoveLeader {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ms, err := tc.members(ctx)
		if err != nil {
			t.Fatal(err)
		}
		leader, _ := find(ms, func(m Member) bool { return m.IsLeader })
		if leader.Name != "ex-4" {
			if err := tc.exec.Client.MoveLeader(ctx, leader.ClientURLs[0], ids["ex-4"]); err != nil {
				t.Fatalf("move the leadership from %s to ex-4: %v", leader, err)
			}
		}
		want = append([]string{"MoveLeader ex-4 -> ex-0"}, want...)
	}

	got = tc.converge(3, tc.opts)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("5 to 3: steps %q, want %q", got, want)
	}
	after := tc.memberIDs()
	for _, name := range []string{"ex-0", "ex-1", "ex-2"} {
		if after[name] != ids[name] {
			t.Errorf("%s is member %x, was %x: a member that should have stayed was replaced", name, after[name], ids[name])
		}
		tc.read(name)
	}
	if len(after) != 3 {
		t.Errorf("members after the scale down: %v, want ex-0..2", after)
	}
}

func TestEtcdScaleWithoutLearners(t *testing.T) {
	t.Parallel() // mostly waiting: etcd accepts a membership change only after 5s of good health
	defer elapsed(t)()
	tc := newTestCluster(t, 3)
	tc.put()
	if got, want := tc.converge(4, v32), []string{"Add ex-3", "Start ex-3"}; !reflect.DeepEqual(got, want) {
		t.Errorf("3 to 4 as on etcd 3.2: steps %q, want %q", got, want)
	}
	tc.read("ex-3")
	if got, want := tc.converge(3, v32), []string{"Remove ex-3"}; !reflect.DeepEqual(got, want) {
		t.Errorf("4 to 3 as on etcd 3.2: steps %q, want %q", got, want)
	}
}

func TestEtcdReplaceFailedMember(t *testing.T) {
	t.Parallel() // mostly waiting: etcd accepts a membership change only after 5s of good health
	defer elapsed(t)()
	tc := newTestCluster(t, 3)
	tc.put()
	before := tc.memberIDs()

	// Kill a member that does not lead (a lost leader costs an election,
	// which the loop would ride out, but the test would be slower).
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ms, err := tc.members(ctx)
	if err != nil {
		t.Fatal(err)
	}
	victim, _ := findLast(ms, func(m Member) bool { return !m.IsLeader })
	tc.stop(victim.Name, true)
	tc.lost[victim.Name] = true

	got := tc.converge(3, tc.opts)
	want := append([]string{"Remove " + victim.Name}, tc.adds(victim.Name)...)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("replace %s: steps %q, want %q", victim, got, want)
	}
	after := tc.memberIDs()
	if len(after) != 3 || after[victim.Name] == before[victim.Name] {
		t.Errorf("members %v after the replacement, before %v: want %s with a new ID", after, before, victim)
	}
	tc.read(victim.Name)
}

func TestEtcdResumeAfterOperatorRestart(t *testing.T) {
	t.Parallel() // mostly waiting: etcd accepts a membership change only after 5s of good health
	defer elapsed(t)()
	tc := newTestCluster(t, 3)
	tc.put()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	ms, err := tc.members(ctx)
	if err != nil {
		t.Fatal(err)
	}
	add := Next(5, ms, tc.opts)
	if add.String() != tc.adds("ex-3")[0] {
		t.Fatalf("Next = %s, want %s", add, tc.adds("ex-3")[0])
	}
	// etcd refuses membership changes until its members have been
	// connected for 5s (etcdserver.HealthInterval): a new cluster says
	// "unhealthy cluster", which Apply reports as a Retry.
	added := tc.applyUntilDone(add)

	// The operator restarts before it creates the pod: a new process with a
	// new executor and nothing remembered.
	tc.exec = tc.executor()
	// Before etcd 3.5 a member lists the members from its own copy, which
	// a follower updates only when it applies the add: the new process may
	// ask before it has (the list "may lag by a change", as Members says),
	// and plans the add again, which the next reconcile corrects. Ask until
	// the list holds the member, as that next reconcile would.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if ms, err = tc.members(ctx); err != nil {
			t.Fatal(err)
		}
		if _, ok := find(ms, func(m Member) bool { return m.ID == added.ID }); ok || time.Now().After(deadline) {
			break
		}
		t.Logf("the list after the restart lacks member %x yet: %v", added.ID, ms)
	}
	step := Next(5, ms, tc.opts)
	if step.Action != Start || step.Member.Name != "ex-3" || step.Member.ID != added.ID {
		t.Fatalf("after the restart Next = %s (member %x), want Start ex-3 (member %x)", step, step.Member.ID, added.ID)
	}
	// A MemberAdd that the old process sent again is no second member: etcd
	// 3.4 and later answer with the learner it has; before, a voting member
	// that has not started leaves the cluster short of full health, and
	// etcd refuses every membership change ("unhealthy cluster", its
	// strict reconfiguration check) until that member runs.
	if tc.spec.Learners {
		if again := tc.applyUntilDone(add); again.ID != added.ID {
			t.Errorf("Apply(%s) again = %+v; want member %x once more", add, again, added.ID)
		}
	} else if again, err := tc.exec.Apply(ctx, add); err != nil || !again.Retry {
		t.Errorf("Apply(%s) again = %+v, %v; want a retry while ex-3 has not started", add, again, err)
	}
	if ids := tc.memberIDs(); len(ids) != 4 {
		t.Errorf("members after the repeated add: %v, want 4", ids)
	}

	got := tc.converge(5, tc.opts)
	want := append(tc.adds("ex-3")[1:], tc.adds("ex-4")...)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("steps after the restart %q, want %q", got, want)
	}
	tc.read("ex-3")
	tc.read("ex-4")
}

func TestEtcdQuorumLossIsReportedNotRepaired(t *testing.T) {
	t.Parallel() // mostly waiting: etcd accepts a membership change only after 5s of good health
	defer elapsed(t)()
	tc := newTestCluster(t, 3)
	tc.put()
	before := tc.memberIDs()

	// Two of three pods go, and the operator believes their volumes gone
	// too: the strongest temptation to "repair". (The two followers: a
	// leader that stops hands its leadership over first, which is slower.)
	var gone []string
	for name, e := range tc.servers {
		if !e.leads() && len(gone) < 2 {
			gone = append(gone, name)
		}
	}
	sort.Strings(gone)
	for _, name := range gone {
		tc.stopInBackground(name, false)
		tc.lost[name] = true
	}
	tc.closing.Wait()

	for _, desired := range []int{3, 1} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		step, _ := tc.reconcile(ctx, desired, tc.opts)
		cancel()
		if step.Action != Blocked || step.Cause != QuorumLost {
			t.Fatalf("desired %d with %v down: Next = %s, want Blocked (QuorumLost)", desired, gone, step)
		}
		t.Logf("desired %d: %s", desired, step)
	}

	// Nothing was removed: the first comes back with its data, and the
	// quorum with it.
	back, still := gone[0], gone[1]
	tc.lost[back] = false
	tc.ready(tc.launch(back, "", embed.ClusterStateFlagExisting))
	if after := tc.memberIDs(); !reflect.DeepEqual(after, before) {
		t.Errorf("members %v after the quorum came back, want %v", after, before)
	}
	tc.read(back)
	var step Step
	for range 50 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		ms, err := tc.members(ctx)
		cancel()
		if err == nil {
			if step = Next(3, ms, tc.opts); step.Action != Blocked {
				break
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	// With the quorum back, the member still marked lost is replaced.
	if step.String() != "Remove "+still {
		t.Errorf("with the quorum back Next = %s, want Remove %s", step, still)
	}
}
