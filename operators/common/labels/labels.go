// Package labels names the well-known labels and annotations every operator
// puts on what it creates, so that kubectl selectors work the same across them.
package labels

// The recommended labels of https://kubernetes.io/docs/concepts/overview/working-with-objects/common-labels/.
const (
	Name      = "app.kubernetes.io/name"
	Instance  = "app.kubernetes.io/instance"
	Component = "app.kubernetes.io/component"
	PartOf    = "app.kubernetes.io/part-of"
	ManagedBy = "app.kubernetes.io/managed-by"
)

// PartOfValue is the app.kubernetes.io/part-of value of everything this
// project creates.
const PartOfValue = "operator-workshops"

// Selector returns the labels that identify the children of one custom
// resource: app is the kind of application (for example "database"), instance
// the name of the custom resource. Selectors must use all of them; a selector
// on app alone would match the children of every instance.
func Selector(app, instance string) map[string]string {
	return map[string]string{Name: app, Instance: instance}
}

// Standard returns Selector's labels plus those that say who manages the
// object; put them on every child.
func Standard(app, instance, managedBy string) map[string]string {
	l := Selector(app, instance)
	l[PartOf] = PartOfValue
	l[ManagedBy] = managedBy
	return l
}
