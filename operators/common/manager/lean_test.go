package manager

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// decodedPod is the pod of podJSON as an informer decodes it: every string
// a copy of its own.
func decodedPod(t *testing.T) *corev1.Pod {
	t.Helper()
	const podJSON = `{"metadata": {"name": "db-0", "namespace": "shop", "generateName": "db-",
		"labels": {"app.kubernetes.io/name": "mysql", "app.kubernetes.io/instance": "db"},
		"annotations": {"note": "` + "%s" + `"},
		"finalizers": ["otus.homework/backup"],
		"ownerReferences": [{"apiVersion": "otus.homework/v1", "kind": "MySQL", "name": "db", "uid": "0b7b1c6e-4a0e-4b8e-9c53-3f1d5f0e2a11", "controller": true}],
		"managedFields": [{"manager": "kubelet"}]},
		"status": {"phase": "Running"}}`
	var p corev1.Pod
	if err := json.Unmarshal([]byte(strings.Replace(podJSON, "%s", strings.Repeat("x", maxLen+1), 1)), &p); err != nil {
		t.Fatal(err)
	}
	return &p
}

func leanPod(t *testing.T, p *corev1.Pod) *corev1.Pod {
	t.Helper()
	out, err := lean(p)
	if err != nil {
		t.Fatal(err)
	}
	return out.(*corev1.Pod)
}

func sameMemory(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }

func TestLeanSharesTheStringsOfEqualMetadata(t *testing.T) {
	first, second := decodedPod(t), decodedPod(t)
	want := first.DeepCopy()
	want.ManagedFields = nil
	if sameMemory(first.Namespace, second.Namespace) {
		t.Fatal("two decodings share memory before lean: the test shows nothing")
	}

	a, b := leanPod(t, first), leanPod(t, second)
	if !reflect.DeepEqual(a, want) || !reflect.DeepEqual(b, want) {
		t.Fatalf("lean changed a value: got\n%+v\nwant\n%+v", b, want)
	}
	shared := map[string][2]string{
		"namespace":      {a.Namespace, b.Namespace},
		"generateName":   {a.GenerateName, b.GenerateName},
		"finalizer":      {a.Finalizers[0], b.Finalizers[0]},
		"owner's kind":   {a.OwnerReferences[0].Kind, b.OwnerReferences[0].Kind},
		"owner's name":   {a.OwnerReferences[0].Name, b.OwnerReferences[0].Name},
		"owner's UID":    {string(a.OwnerReferences[0].UID), string(b.OwnerReferences[0].UID)},
		"label value":    {a.Labels["app.kubernetes.io/name"], b.Labels["app.kubernetes.io/name"]},
		"annotation key": {firstKey(a.Annotations), firstKey(b.Annotations)},
	}
	for what, s := range shared {
		if !sameMemory(s[0], s[1]) {
			t.Errorf("the two pods' %s %q do not share memory", what, s[0])
		}
	}
	for k := range b.Labels {
		if !sameMemory(k, firstKeyEqual(a.Labels, k)) {
			t.Errorf("the label key %q is not shared", k)
		}
	}
	if sameMemory(a.Annotations["note"], b.Annotations["note"]) {
		t.Errorf("an annotation value longer than %d bytes was shared: the table would hold documents", maxLen)
	}
}

func firstKey(m map[string]string) string {
	for k := range m {
		return k
	}
	return ""
}

func firstKeyEqual(m map[string]string, key string) string {
	for k := range m {
		if k == key {
			return k
		}
	}
	return ""
}

func TestInternedStartsAgainWhenFull(t *testing.T) {
	table := interned{max: 2}
	one := table.of(string([]byte("one")))
	table.of("two")
	if !sameMemory(table.of(string([]byte("one"))), one) {
		t.Fatal("a string given before was not given again")
	}
	table.of("three") // full: starts again
	if len(table.set) != 1 {
		t.Fatalf("the table holds %d strings after it was full; want 1, the newest", len(table.set))
	}
	if sameMemory(table.of(string([]byte("one"))), one) {
		t.Error("a string of the table before it started again is still held")
	}
}

func TestLeanLeavesWhatIsNotAnObject(t *testing.T) {
	tombstone := "not an object"
	if out, err := lean(tombstone); err != nil || out != tombstone {
		t.Errorf("lean(%q) = %v, %v", tombstone, out, err)
	}
	meta := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "shop"}}
	if out, err := lean(meta); err != nil || out.(*metav1.PartialObjectMetadata).Namespace != "shop" {
		t.Errorf("lean of an object's metadata = %v, %v", out, err)
	}
}
