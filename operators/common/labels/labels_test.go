package labels

import (
	"testing"

	k8slabels "k8s.io/apimachinery/pkg/labels"
)

func TestSelectorSeparatesInstances(t *testing.T) {
	tests := []struct {
		name     string
		selector map[string]string
		object   map[string]string
		want     bool
	}{
		{"own child", Selector("database", "a"), Standard("database", "a", "database-operator"), true},
		{"sibling instance", Selector("database", "a"), Standard("database", "b", "database-operator"), false},
		{"other app, same instance name", Selector("database", "a"), Standard("gordon", "a", "gordon-operator"), false},
		{"the seed's app=db pod", Selector("database", "a"), map[string]string{"app": "db"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := k8slabels.SelectorFromSet(tt.selector).Matches(k8slabels.Set(tt.object))
			if got != tt.want {
				t.Errorf("selector %v matches %v = %v, want %v", tt.selector, tt.object, got, tt.want)
			}
		})
	}
}
