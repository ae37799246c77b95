package controller

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	"github.com/operator-workshops/workshop/operators/common/pods"
	dbv1 "github.com/operator-workshops/workshop/operators/database/api/v1"
)

func database(name string, t dbv1.Type) *dbv1.Database {
	return &dbv1.Database{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name)},
		Spec:       dbv1.DatabaseSpec{Type: t},
	}
}

var testOwner = metav1ac.OwnerReference().WithName("x").WithController(true)

func TestPodFor(t *testing.T) {
	secret := &dbv1.SecretKeyRef{Name: "mysql-db-root-password", Key: "password"}
	tests := []struct {
		name      string
		db        *dbv1.Database
		image     string
		password  *dbv1.SecretKeyRef
		wantImage string
		wantPort  int32
		wantEnv   bool
	}{
		{name: "mongo", db: database("mongo-db", dbv1.Mongo), image: "mongo:4.0", wantImage: "mongo:4.0", wantPort: 27017},
		{name: "mysql", db: database("mysql-db", dbv1.MySQL), image: "mysql:8.0", password: secret, wantImage: "mysql:8.0", wantPort: 3306, wantEnv: true},
		{name: "overridden image", db: database("m", dbv1.Mongo), image: "registry.local/mongo:7", wantImage: "registry.local/mongo:7", wantPort: 27017},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := podFor(tt.db, tt.image, tt.password, testOwner, DefaultRequests)
			if *pod.Name != tt.db.Name || *pod.Namespace != "ns" {
				t.Errorf("pod is %s/%s, want ns/%s", *pod.Namespace, *pod.Name, tt.db.Name)
			}
			if len(pod.OwnerReferences) != 1 || !*pod.OwnerReferences[0].Controller {
				t.Errorf("pod is not controlled by its Database: %+v", pod.OwnerReferences)
			}
			c := pod.Spec.Containers[0]
			if *c.Image != tt.wantImage || *c.Ports[0].ContainerPort != tt.wantPort {
				t.Errorf("container runs %s on %d, want %s on %d", *c.Image, *c.Ports[0].ContainerPort, tt.wantImage, tt.wantPort)
			}
			if *c.Name != string(tt.db.Spec.Type) {
				t.Errorf("container name %q, want the type %q as in the workshop", *c.Name, tt.db.Spec.Type)
			}
			if got := len(c.Env) == 1; got != tt.wantEnv {
				t.Fatalf("env %v, want password env %v", c.Env, tt.wantEnv)
			}
			if tt.wantEnv {
				e := c.Env[0]
				if e.Value != nil || *e.ValueFrom.SecretKeyRef.Name != secret.Name || *e.ValueFrom.SecretKeyRef.Key != "password" {
					t.Errorf("password must come from Secret %s, got %+v", secret.Name, e)
				}
			}
			if a := pod.Spec.AutomountServiceAccountToken; a == nil || *a {
				t.Error("the database pod mounts a ServiceAccount token it never uses: automountServiceAccountToken is not false")
			}
			// The restricted Pod Security Standard.
			sc := pod.Spec.SecurityContext
			if !*sc.RunAsNonRoot || *sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
				t.Errorf("pod security context is not restricted: %+v", sc)
			}
			if *c.SecurityContext.AllowPrivilegeEscalation || c.SecurityContext.Capabilities.Drop[0] != "ALL" {
				t.Errorf("container security context is not restricted: %+v", c.SecurityContext)
			}
			if r := c.Resources; r == nil || !r.Requests.Cpu().Equal(DefaultRequests.CPU) || !r.Requests.Memory().Equal(DefaultRequests.Memory) {
				t.Errorf("container requests %+v, want the operator's %v", r, DefaultRequests.List())
			}
			if c.ReadinessProbe == nil || c.ReadinessProbe.TCPSocket.Port.IntVal != tt.wantPort {
				t.Errorf("readiness probe should check port %d: %+v", tt.wantPort, c.ReadinessProbe)
			}
		})
	}
}

func TestPodHashFollowsSpec(t *testing.T) {
	db := database("a", dbv1.Mongo)
	hash := func(image string, r pods.Requests) string {
		return podFor(db, image, nil, testOwner, r).Annotations[podSpecHashAnnotation]
	}
	h := func(image string) string { return hash(image, DefaultRequests) }
	if first, second := h("mongo:4.0"), h("mongo:4.0"); first != second {
		t.Error("the hash of one spec differs between two builds")
	}
	// The operator's requests are not the Database's spec: new flags must
	// not replace running databases and their data.
	if h("mongo:4.0") != hash("mongo:4.0", pods.NewRequests("1", "1Gi")) {
		t.Error("a change of the operator's requests changes the hash: every Database's Pod would be replaced")
	}
	if h("mongo:4.0") == h("mongo:5.0") {
		t.Error("an image change leaves the hash as it was: the Pod would not be replaced")
	}
}

// The workshop's Services all selected `app: db`, so each one sent traffic to
// every database Pod of the namespace. Each Service must select its own Pod.
func TestServiceSelectsOnlyItsOwnPod(t *testing.T) {
	a, b := database("a", dbv1.Mongo), database("b", dbv1.MySQL)
	podA := podFor(a, "mongo:4.0", nil, testOwner, DefaultRequests)
	podB := podFor(b, "mysql:8.0", &dbv1.SecretKeyRef{Name: "s", Key: "password"}, testOwner, DefaultRequests)
	tests := []struct {
		name string
		svc  *dbv1.Database
		pod  map[string]string
		want bool
	}{
		{"a selects a", a, podA.Labels, true},
		{"a ignores b", a, podB.Labels, false},
		{"b selects b", b, podB.Labels, true},
		{"b ignores a", b, podA.Labels, false},
		{"a ignores the workshop's app=db pod", a, map[string]string{"app": "db"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc := serviceFor(tt.svc, testOwner)
			got := k8slabels.SelectorFromSet(svc.Spec.Selector).Matches(k8slabels.Set(tt.pod))
			if got != tt.want {
				t.Errorf("selector %v on %v = %v, want %v", svc.Spec.Selector, tt.pod, got, tt.want)
			}
		})
	}
}

func TestServiceFor(t *testing.T) {
	tests := []struct {
		typ  dbv1.Type
		port int32
	}{{dbv1.Mongo, 27017}, {dbv1.MySQL, 3306}}
	for _, tt := range tests {
		t.Run(string(tt.typ), func(t *testing.T) {
			svc := serviceFor(database("d", tt.typ), testOwner)
			if *svc.Spec.Type != corev1.ServiceTypeNodePort {
				t.Errorf("type %s, want NodePort", *svc.Spec.Type)
			}
			p := svc.Spec.Ports[0]
			if *p.Port != tt.port || p.TargetPort.IntVal != tt.port || p.NodePort != nil {
				t.Errorf("port %+v: want %d -> %d with a NodePort the API server allocates", p, tt.port, tt.port)
			}
		})
	}
}
