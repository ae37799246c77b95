package e2e

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/e2e-framework/klient/k8s"
	"sigs.k8s.io/e2e-framework/klient/k8s/resources"
	"sigs.k8s.io/e2e-framework/klient/wait/conditions"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	dbv1 "github.com/operator-workshops/workshop/operators/database/api/v1"
)

func databaseReady(obj k8s.Object) bool {
	return meta.IsStatusConditionTrue(obj.(*dbv1.Database).Status.Conditions, "Ready")
}

// The seed's test: apply mongo.yml, see the Pod and the NodePort Service,
// delete it, see them gone.
func TestWorkshopMongoDatabase(t *testing.T) {
	db := &dbv1.Database{}
	f := features.New("the workshop's mongo Database").
		WithSetup("namespace", createNamespace).
		Assess("kubectl apply -f mongo-db.yaml makes a Pod and a NodePort Service", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := client(t, cfg)
			applySample(ctx, t, cfg, "operators/database/config/samples/mongo-db.yaml", db)
			waitFor(t, "mongo-db to be Ready", conditions.New(r).ResourceMatch(db, databaseReady))

			pod := &corev1.Pod{}
			if err := r.Get(ctx, "mongo-db", db.Namespace, pod); err != nil {
				t.Fatal(err)
			}
			if pod.Status.Phase != corev1.PodRunning || pod.Spec.Containers[0].Image != "mongo:4.0" {
				t.Errorf("pod/mongo-db is %s running %s, want Running mongo:4.0", pod.Status.Phase, pod.Spec.Containers[0].Image)
			}
			svc := &corev1.Service{}
			if err := r.Get(ctx, "mongo-db", db.Namespace, svc); err != nil {
				t.Fatal(err)
			}
			p := svc.Spec.Ports[0]
			if svc.Spec.Type != corev1.ServiceTypeNodePort || p.Port != 27017 || p.NodePort == 0 {
				t.Errorf("service/mongo-db is %s %d:%d/TCP, want NodePort 27017:<port>/TCP", svc.Spec.Type, p.Port, p.NodePort)
			}
			if err := r.Get(ctx, "mongo-db", db.Namespace, db); err != nil {
				t.Fatal(err)
			}
			if db.Status.NodePort != p.NodePort {
				t.Errorf("status.nodePort %d, the Service says %d", db.Status.NodePort, p.NodePort)
			}
			return ctx
		}).
		Assess("kubectl delete -f mongo-db.yaml removes the Pod and the Service", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := client(t, cfg)
			if err := r.Delete(ctx, db); err != nil {
				t.Fatal(err)
			}
			gone := metav1.ObjectMeta{Name: "mongo-db", Namespace: db.Namespace}
			waitFor(t, "pod/mongo-db to go", conditions.New(r).ResourceDeleted(&corev1.Pod{ObjectMeta: gone}))
			waitFor(t, "service/mongo-db to go", conditions.New(r).ResourceDeleted(&corev1.Service{ObjectMeta: gone}))
			return ctx
		}).
		WithTeardown("namespace", deleteNamespace).
		Feature()
	testEnv.Test(t, f)
}

// The seed's Services all selected `app: db`: with a mongo and a mysql
// Database in one namespace, each Service sent traffic to both Pods.
func TestEachServiceReachesOnlyItsDatabase(t *testing.T) {
	f := features.New("two Databases in one namespace").
		WithSetup("namespace", createNamespace).
		Assess("each Service's endpoints are its own Pod", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := client(t, cfg)
			mongo, mysql := &dbv1.Database{}, &dbv1.Database{}
			applySample(ctx, t, cfg, "operators/database/config/samples/mongo-db.yaml", mongo)
			applySample(ctx, t, cfg, "operators/database/config/samples/mysql-db.yaml", mysql)
			for _, db := range []*dbv1.Database{mongo, mysql} {
				waitFor(t, db.Name+" to be Ready", conditions.New(r).ResourceMatch(db, databaseReady))
			}
			for _, db := range []*dbv1.Database{mongo, mysql} {
				pod := &corev1.Pod{}
				if err := r.Get(ctx, db.Name, db.Namespace, pod); err != nil {
					t.Fatal(err)
				}
				slices := &discoveryv1.EndpointSliceList{}
				waitFor(t, "the endpoints of service/"+db.Name+" to be pod/"+db.Name,
					conditions.New(r).ResourceListMatchN(slices, 1, func(o k8s.Object) bool {
						return onlyAddress(o.(*discoveryv1.EndpointSlice), pod.Status.PodIP)
					}, resources.WithLabelSelector(discoveryv1.LabelServiceName+"="+db.Name)))
			}
			return ctx
		}).
		WithTeardown("namespace", deleteNamespace).
		Feature()
	testEnv.Test(t, f)
}

func onlyAddress(slice *discoveryv1.EndpointSlice, ip string) bool {
	if len(slice.Endpoints) != 1 {
		return false
	}
	addrs := slice.Endpoints[0].Addresses
	return ip != "" && len(addrs) == 1 && addrs[0] == ip
}

// The operator owns the Pod, so it heals it: a deleted Pod comes back.
func TestDeletedPodComesBack(t *testing.T) {
	f := features.New("a deleted database Pod").
		WithSetup("namespace", createNamespace).
		Assess("is created again and the Database is Ready again", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := client(t, cfg)
			db := &dbv1.Database{}
			applySample(ctx, t, cfg, "operators/database/config/samples/mongo-db.yaml", db)
			waitFor(t, "mongo-db to be Ready", conditions.New(r).ResourceMatch(db, databaseReady))
			pod := &corev1.Pod{}
			if err := r.Get(ctx, db.Name, db.Namespace, pod); err != nil {
				t.Fatal(err)
			}
			if err := r.Delete(ctx, pod); err != nil {
				t.Fatal(err)
			}
			old := pod.UID
			waitFor(t, "a new, running pod/mongo-db", conditions.New(r).ResourceMatch(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: db.Name, Namespace: db.Namespace}},
				func(o k8s.Object) bool {
					p := o.(*corev1.Pod)
					return p.UID != old && p.Status.Phase == corev1.PodRunning
				}))
			waitFor(t, "mongo-db to be Ready again", conditions.New(r).ResourceMatch(db, databaseReady))
			return ctx
		}).
		WithTeardown("namespace", deleteNamespace).
		Feature()
	testEnv.Test(t, f)
}
