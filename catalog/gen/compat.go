package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// crdChanges lists what a CRD's new definition takes from the custom
// resources its old one admitted, one finding a line: a version no longer
// served, a field removed or of another type, a field newly required, an
// enum value dropped, a bound or pattern added or tightened, a validation
// rule added. Stored objects of the old release would be refused on their
// next update, or lose a field, unless a conversion or a person's step
// covers them. New optional fields and loosened bounds are no finding.
func crdChanges(old, cur *apiextensionsv1.CustomResourceDefinition) []string {
	var out []string
	versions := map[string]*apiextensionsv1.CustomResourceDefinitionVersion{}
	for i := range cur.Spec.Versions {
		versions[cur.Spec.Versions[i].Name] = &cur.Spec.Versions[i]
	}
	for _, ov := range old.Spec.Versions {
		if !ov.Served {
			continue
		}
		nv := versions[ov.Name]
		if nv == nil || !nv.Served {
			out = append(out, fmt.Sprintf("%s %s: no longer served", cur.Name, ov.Name))
			continue
		}
		if ov.Schema == nil || ov.Schema.OpenAPIV3Schema == nil {
			continue
		}
		var ns *apiextensionsv1.JSONSchemaProps
		if nv.Schema != nil {
			ns = nv.Schema.OpenAPIV3Schema
		}
		prefix := cur.Name + " " + ov.Name + ":"
		for _, f := range schemaChanges("", ov.Schema.OpenAPIV3Schema, ns) {
			out = append(out, prefix+" "+f)
		}
	}
	slices.Sort(out)
	return out
}

// schemaChanges compares the schema of one field (at path) in two
// releases.
func schemaChanges(path string, old, cur *apiextensionsv1.JSONSchemaProps) []string {
	at := path
	if at == "" {
		at = "."
	}
	if cur == nil {
		return []string{at + " removed"}
	}
	var out []string
	add := func(format string, args ...any) { out = append(out, at+" "+fmt.Sprintf(format, args...)) }
	if old.Type != cur.Type && cur.Type != "" {
		add("type %s became %s", old.Type, cur.Type)
	}
	if old.XPreserveUnknownFields != nil && *old.XPreserveUnknownFields &&
		(cur.XPreserveUnknownFields == nil || !*cur.XPreserveUnknownFields) {
		add("no longer keeps unknown fields")
	}
	for _, r := range cur.Required {
		if !slices.Contains(old.Required, r) {
			add("requires %s", r)
		}
	}
	if len(cur.Enum) > 0 {
		allowed := map[string]bool{}
		for _, e := range cur.Enum {
			allowed[string(e.Raw)] = true
		}
		if len(old.Enum) == 0 {
			add("enum added")
		}
		for _, e := range old.Enum {
			if !allowed[string(e.Raw)] {
				add("enum value %s dropped", e.Raw)
			}
		}
	}
	if cur.Pattern != old.Pattern && cur.Pattern != "" {
		add("pattern %q became %q", old.Pattern, cur.Pattern)
	}
	tighter := func(name string, o, c *float64, lower bool) {
		switch {
		case c == nil:
		case o == nil:
			add("%s %v added", name, *c)
		case lower && *c > *o, !lower && *c < *o:
			add("%s %v became %v", name, *o, *c)
		}
	}
	tighter("minimum", old.Minimum, cur.Minimum, true)
	tighter("maximum", old.Maximum, cur.Maximum, false)
	tighter("minLength", toFloat(old.MinLength), toFloat(cur.MinLength), true)
	tighter("maxLength", toFloat(old.MaxLength), toFloat(cur.MaxLength), false)
	tighter("minItems", toFloat(old.MinItems), toFloat(cur.MinItems), true)
	tighter("maxItems", toFloat(old.MaxItems), toFloat(cur.MaxItems), false)
	tighter("minProperties", toFloat(old.MinProperties), toFloat(cur.MinProperties), true)
	tighter("maxProperties", toFloat(old.MaxProperties), toFloat(cur.MaxProperties), false)
	rules := map[string]bool{}
	for _, r := range old.XValidations {
		rules[r.Rule] = true
	}
	for _, r := range cur.XValidations {
		if !rules[r.Rule] {
			add("validation rule added: %s", r.Rule)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(old.Properties)) {
		o := old.Properties[name]
		var c *apiextensionsv1.JSONSchemaProps
		if p, ok := cur.Properties[name]; ok {
			c = &p
		}
		out = append(out, schemaChanges(path+"."+name, &o, c)...)
	}
	if old.Items != nil && old.Items.Schema != nil {
		var c *apiextensionsv1.JSONSchemaProps
		if cur.Items != nil {
			c = cur.Items.Schema
		}
		out = append(out, schemaChanges(path+"[]", old.Items.Schema, c)...)
	}
	if old.AdditionalProperties != nil && old.AdditionalProperties.Schema != nil {
		var c *apiextensionsv1.JSONSchemaProps
		if cur.AdditionalProperties != nil {
			c = cur.AdditionalProperties.Schema
		}
		out = append(out, schemaChanges(path+".*", old.AdditionalProperties.Schema, c)...)
	}
	return out
}

func toFloat(i *int64) *float64 {
	if i == nil {
		return nil
	}
	f := float64(*i)
	return &f
}

// notedChanges reads catalog/CRD-CHANGES.md's findings: the lines of its
// fenced blocks, each a crdChanges finding a person accepted, with the
// release notes saying what to do.
func notedChanges(doc string) map[string]bool {
	noted := map[string]bool{}
	in := false
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, "```") {
			in = !in
			continue
		}
		if in && strings.TrimSpace(line) != "" {
			noted[strings.TrimSpace(line)] = true
		}
	}
	return noted
}
