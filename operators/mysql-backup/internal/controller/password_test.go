package controller

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// passwordWorld is a model of everything a password change involves: the
// server, the credentials Secret, the password Job and its pod, the user and
// the operator, which decides with planPassword from what it reads.
type passwordWorld struct {
	rnd *rand.Rand
	// server is the password the server accepts.
	server string
	// The Secret.
	secret  map[string]string
	version int
	desired string
	job     *worldJob
	// seen is the Job as the operator's cache last showed it: the cache
	// lags, so the operator may decide from an older Job.
	seen *worldJob
	log  []string
}

type worldJob struct {
	target  string
	version int
	state   jobState
	// started: the pod read its passwords, cur and new.
	started  bool
	cur, new string
}

func newWorld(seed uint64) *passwordWorld {
	return &passwordWorld{
		rnd:     rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		server:  "p0",
		secret:  map[string]string{keyPassword: "p0"},
		desired: "p0",
	}
}

func (w *passwordWorld) logf(format string, args ...any) {
	w.log = append(w.log, fmt.Sprintf(format, args...))
}

// operator takes one step of reconcilePassword.
func (w *passwordWorld) operator() {
	view := w.job
	if w.rnd.IntN(4) == 0 {
		view = w.seen // a stale cache
	}
	w.seen = clone(w.job)
	s := passwordState{confirmed: w.secret[keyPassword], pending: w.secret[keyPendingPassword], desired: w.desired}
	if view != nil {
		s.job = &passwordJobState{target: view.target, fresh: view.version == w.version, state: view.state}
	}
	step := planPassword(s)
	w.logf("operator sees %+v (job %+v): %d %s", s, s.job, step.action, step.target)
	switch step.action {
	case passwordRecord:
		w.secret[keyPendingPassword] = w.desired
		w.version++
	case passwordStart:
		if w.job != nil {
			return // AlreadyExists: the cache had not shown it
		}
		w.job = &worldJob{target: step.target, version: w.version, state: jobRunning}
	case passwordConfirm:
		w.secret[keyPassword] = w.secret[step.target]
		delete(w.secret, keyPendingPassword)
		w.version++
	case passwordRemove:
		// A Job is deleted by UID: a stale view names a Job that is gone.
		if w.job != nil && view != nil && w.job.version == view.version && w.job.target == view.target {
			if w.job.state == jobRunning {
				w.logf("the operator deleted a running Job")
				w.killJob()
			}
			w.job = nil
		}
	}
}

// killJob: the pod dies wherever it is.
func (w *passwordWorld) killJob() {
	if w.job.started && w.rnd.IntN(2) == 0 && w.server == w.job.cur {
		w.server = w.job.new // it died right after ALTER USER
	}
}

// jobRuns advances the Job: its pod reads the Secret when it starts, then
// runs password.sh, which may die at any point.
func (w *passwordWorld) jobRuns(alwaysSucceed bool) {
	j := w.job
	if j == nil || j.state != jobRunning {
		return
	}
	if !j.started {
		j.started = true
		other := keyPassword
		if j.target == keyPassword {
			other = keyPendingPassword
		}
		j.cur, j.new = w.secret[other], w.secret[j.target]
		w.logf("job pod starts: cur %q new %q", j.cur, j.new)
		return
	}
	if !alwaysSucceed && w.rnd.IntN(3) == 0 {
		w.killJob()
		j.state = jobFailed
		w.logf("job failed; server has %q", w.server)
		return
	}
	// password.sh: log in with cur and set new, or find new already set.
	switch w.server {
	case j.cur:
		w.server = j.new
		j.state = jobSucceeded
	case j.new:
		j.state = jobSucceeded
	default:
		j.state = jobFailed
	}
	w.logf("job ends %d; server has %q", j.state, w.server)
}

// user edits the spec, or deletes a failed Job to retry it.
func (w *passwordWorld) user() {
	if w.job != nil && w.job.state == jobFailed && w.rnd.IntN(2) == 0 {
		w.job = nil
		w.logf("user deletes the failed Job")
		return
	}
	w.desired = fmt.Sprintf("p%d", w.rnd.IntN(4))
	w.logf("user asks for %q", w.desired)
}

func clone(j *worldJob) *worldJob {
	if j == nil {
		return nil
	}
	c := *j
	return &c
}

// holds is the invariant: the operator can log in with a password it has.
func (w *passwordWorld) holds() bool {
	return w.server == w.secret[keyPassword] || (w.secret[keyPendingPassword] != "" && w.server == w.secret[keyPendingPassword])
}

// TestPasswordAlwaysWorks interleaves spec edits, Job outcomes (success,
// failure, death halfway, before or after ALTER USER), a lagging cache and
// operator restarts (planPassword keeps no state: a restart is a pass like
// any other) and checks after every step that the server has a password
// of the Secret's, then that the server ends with the desired password once
// the user stops and Jobs succeed.
func TestPasswordAlwaysWorks(t *testing.T) {
	runs := 3000
	if testing.Short() {
		runs = 300
	}
	for seed := range uint64(runs) {
		w := newWorld(seed)
		for range 150 {
			switch w.rnd.IntN(3) {
			case 0:
				w.operator()
			case 1:
				w.jobRuns(false)
			default:
				if w.rnd.IntN(3) == 0 {
					w.user()
				} else {
					w.operator()
				}
			}
			if !w.holds() {
				t.Fatalf("seed %d: the server has %q, the Secret %v:\n%s", seed, w.server, w.secret, join(w.log))
			}
		}
		if w.job != nil && w.job.state == jobFailed {
			w.job = nil // the user retries
		}
		for range 60 {
			w.operator()
			w.jobRuns(true)
			if !w.holds() {
				t.Fatalf("seed %d: the server has %q, the Secret %v:\n%s", seed, w.server, w.secret, join(w.log))
			}
		}
		if w.server != w.desired || w.secret[keyPassword] != w.desired || w.secret[keyPendingPassword] != "" {
			t.Fatalf("seed %d: did not converge: server %q, desired %q, Secret %v, Job %+v:\n%s",
				seed, w.server, w.desired, w.secret, w.job, join(w.log))
		}
	}
}

func join(lines []string) string {
	out := ""
	for _, l := range lines[max(0, len(lines)-40):] {
		out += l + "\n"
	}
	return out
}

// The planner's decisions in the cases a reader would ask about.
func TestPlanPassword(t *testing.T) {
	running := &passwordJobState{target: keyPendingPassword, fresh: true, state: jobRunning}
	tests := []struct {
		name string
		s    passwordState
		want passwordStep
	}{
		{"nothing to do", passwordState{confirmed: "a", desired: "a"}, passwordStep{action: passwordDone}},
		{"a new password is recorded first", passwordState{confirmed: "a", desired: "b"}, passwordStep{action: passwordRecord}},
		{"then set", passwordState{confirmed: "a", pending: "b", desired: "b"}, passwordStep{passwordStart, keyPendingPassword}},
		{"a running Job is never interrupted", passwordState{confirmed: "a", pending: "b", desired: "a", job: running}, passwordStep{action: passwordWait}},
		{"a reverted change sets the old password back", passwordState{confirmed: "a", pending: "b", desired: "a"}, passwordStep{passwordStart, keyPassword}},
		{"a third password waits until the pending one is set", passwordState{confirmed: "a", pending: "b", desired: "c"}, passwordStep{passwordStart, keyPendingPassword}},
		{"success is recorded", passwordState{confirmed: "a", pending: "b", desired: "b",
			job: &passwordJobState{target: keyPendingPassword, fresh: true, state: jobSucceeded}}, passwordStep{passwordConfirm, keyPendingPassword}},
		{"a recorded Job goes", passwordState{confirmed: "b", desired: "b",
			job: &passwordJobState{target: keyPendingPassword, state: jobSucceeded}}, passwordStep{action: passwordRemove}},
		{"a failure waits for a person", passwordState{confirmed: "a", pending: "b", desired: "b",
			job: &passwordJobState{target: keyPendingPassword, fresh: true, state: jobFailed}}, passwordStep{passwordFailed, keyPendingPassword}},
		{"a failure the user answered by reverting goes", passwordState{confirmed: "a", pending: "b", desired: "a",
			job: &passwordJobState{target: keyPendingPassword, fresh: true, state: jobFailed}}, passwordStep{action: passwordRemove}},
	}
	for _, tt := range tests {
		if got := planPassword(tt.s); got != tt.want {
			t.Errorf("%s: got %+v, want %+v", tt.name, got, tt.want)
		}
	}
}
