// Package membership changes the membership of a running etcd cluster one
// safe step at a time. It touches no API server: the operator asks Next what
// to do, carries the step out (Executor.Apply for the etcd calls, its own pod
// for Start), reads the cluster again and asks again.
//
// Every rule here protects the data. Only one membership change is ever in
// flight (an added member that has not started, or a learner that is not
// promoted), because two at once can leave a cluster where neither the old
// nor the new majority holds every write. A cluster that has lost its quorum
// is reported, never "repaired": the ways out (a snapshot restore,
// --force-new-cluster) discard writes, and that is a person's decision.
//
// The plan is always computed from what etcd itself says, never from what
// the operator remembers, so an operator that restarts in the middle of a
// step (after MemberAdd, before the pod exists) picks the step up again
// instead of adding a second member.
package membership
