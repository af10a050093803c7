// A stand-in for `helm template`, used only where helm itself is not installed (Debian has no
// helm package). It renders a chart as Helm does for the features pykai's chart uses: Go
// text/template with Helm's function library (sprig, from Debian's package) plus toYaml,
// fromYaml, include, required, tpl and lookup; .Values (values.yaml, then each --values file, then
// --set a.b=c), checked against values.schema.json as Helm checks it (JSON Schema, with Debian's
// gojsonschema: the library Helm 3 used); .Release, .Chart and .Capabilities; crds/ first, then
// templates/*.yaml in name order.
// lookup finds nothing, as in `helm template`, unless --lookup-objects FILE gives the objects (a
// YAML stream) that `helm upgrade` would find in the cluster.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/template"

	sprig "github.com/Masterminds/sprig"
	"github.com/xeipuuv/gojsonschema"
	yaml "gopkg.in/yaml.v3"
)

type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "helm-template: "+format+"\n", args...)
	os.Exit(1)
}

func readYAML(path string) map[string]interface{} {
	data, err := os.ReadFile(path)
	if err != nil {
		fail("%v", err)
	}
	out := map[string]interface{}{}
	if err := yaml.Unmarshal(data, &out); err != nil {
		fail("%s: %v", path, err)
	}
	return out
}

// merge copies src into dst, recursing into maps (later values win, as in Helm).
func merge(dst, src map[string]interface{}) {
	for k, v := range src {
		sv, okS := v.(map[string]interface{})
		dv, okD := dst[k].(map[string]interface{})
		if okS && okD {
			merge(dv, sv)
		} else {
			dst[k] = v
		}
	}
}

func setValue(values map[string]interface{}, assignment string) {
	key, raw, ok := strings.Cut(assignment, "=")
	if !ok {
		fail("--set %q: write it as key.path=value", assignment)
	}
	var value interface{} = raw
	if b, err := strconv.ParseBool(raw); err == nil {
		value = b
	} else if i, err := strconv.ParseInt(raw, 10, 64); err == nil {
		value = i
	}
	parts := strings.Split(key, ".")
	node := values
	for _, part := range parts[:len(parts)-1] {
		next, ok := node[part].(map[string]interface{})
		if !ok {
			next = map[string]interface{}{}
			node[part] = next
		}
		node = next
	}
	node[parts[len(parts)-1]] = value
}

// readObjects reads a YAML stream of objects (for lookup).
func readObjects(path string) []map[string]interface{} {
	file, err := os.Open(path)
	if err != nil {
		fail("%v", err)
	}
	defer file.Close()
	var objects []map[string]interface{}
	decoder := yaml.NewDecoder(file)
	for {
		obj := map[string]interface{}{}
		if err := decoder.Decode(&obj); err != nil {
			if errors.Is(err, io.EOF) {
				return objects
			}
			fail("%s: %v", path, err)
		}
		objects = append(objects, obj)
	}
}

// validate checks the values against the chart's values.schema.json, if it has one, and fails
// with Helm's message listing every problem.
func validate(chartName, chartDir string, values map[string]interface{}) {
	schemaPath := filepath.Join(chartDir, "values.schema.json")
	if _, err := os.Stat(schemaPath); err != nil {
		return
	}
	absolute, err := filepath.Abs(schemaPath)
	if err != nil {
		fail("%v", err)
	}
	result, err := gojsonschema.Validate(
		gojsonschema.NewReferenceLoader("file://"+absolute), gojsonschema.NewGoLoader(values))
	if err != nil {
		fail("%s: %v", schemaPath, err)
	}
	if !result.Valid() {
		var problems []string
		for _, problem := range result.Errors() {
			problems = append(problems, "- "+problem.String())
		}
		fail("values don't meet the specifications of the schema(s) in the following chart(s):\n%s:\n%s",
			chartName, strings.Join(problems, "\n"))
	}
}

func toYAML(v interface{}) string {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		return ""
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

func main() {
	var valueFiles, sets multi
	namespace := flag.String("namespace", "default", "release namespace")
	release := flag.String("release", "pykai", "release name")
	lookupFile := flag.String("lookup-objects", "", "YAML stream of the objects lookup finds")
	flag.Var(&valueFiles, "values", "values file (repeatable)")
	flag.Var(&sets, "set", "key.path=value (repeatable)")
	flag.Parse()
	if flag.NArg() != 1 {
		fail("usage: helm-template [--values F] [--set k=v] [--namespace NS] [--release NAME] CHART_DIR")
	}
	chartDir := flag.Arg(0)
	chart := readYAML(filepath.Join(chartDir, "Chart.yaml"))
	values := readYAML(filepath.Join(chartDir, "values.yaml"))
	for _, file := range valueFiles {
		merge(values, readYAML(file))
	}
	for _, assignment := range sets {
		setValue(values, assignment)
	}
	validate(chart["name"].(string), chartDir, values)
	chartInfo := map[string]interface{}{}
	for k, v := range chart {
		chartInfo[strings.ToUpper(k[:1])+k[1:]] = v
	}
	top := map[string]interface{}{
		"Values":       values,
		"Chart":        chartInfo,
		"Release":      map[string]interface{}{"Name": *release, "Namespace": *namespace, "Service": "Helm", "IsInstall": true},
		"Capabilities": map[string]interface{}{"KubeVersion": map[string]interface{}{"Version": "v1.20.2", "Major": "1", "Minor": "20"}},
	}

	root := template.New("chart")
	funcs := sprig.TxtFuncMap()
	funcs["toYaml"] = toYAML
	funcs["fromYaml"] = func(text string) map[string]interface{} {
		out := map[string]interface{}{}
		if err := yaml.Unmarshal([]byte(text), &out); err != nil {
			out["Error"] = err.Error()
		}
		return out
	}
	funcs["required"] = func(message string, v interface{}) (interface{}, error) {
		if v == nil || v == "" {
			return nil, fmt.Errorf("%s", message)
		}
		return v, nil
	}
	var stored []map[string]interface{}
	if *lookupFile != "" {
		stored = readObjects(*lookupFile)
	}
	funcs["lookup"] = func(apiVersion, kind, namespace, name string) map[string]interface{} {
		for _, obj := range stored {
			meta, _ := obj["metadata"].(map[string]interface{})
			if obj["apiVersion"] == apiVersion && obj["kind"] == kind &&
				meta["namespace"] == namespace && meta["name"] == name {
				return obj
			}
		}
		return map[string]interface{}{}
	}
	funcs["include"] = func(name string, data interface{}) (string, error) {
		var buf bytes.Buffer
		err := root.ExecuteTemplate(&buf, name, data)
		return buf.String(), err
	}
	funcs["tpl"] = func(text string, data interface{}) (string, error) {
		t, err := root.Clone()
		if err == nil {
			t, err = t.New("tpl").Parse(text)
		}
		if err != nil {
			return "", err
		}
		var buf bytes.Buffer
		err = t.Execute(&buf, data)
		return buf.String(), err
	}
	root.Funcs(funcs).Option("missingkey=zero")

	name := chart["name"].(string)
	files, _ := filepath.Glob(filepath.Join(chartDir, "templates", "*"))
	sort.Strings(files)
	var rendered []string
	for _, file := range files {
		if !strings.HasSuffix(file, ".yaml") && !strings.HasSuffix(file, ".tpl") {
			continue
		}
		data, err := os.ReadFile(file)
		if err != nil {
			fail("%v", err)
		}
		templateName := name + "/templates/" + filepath.Base(file)
		if _, err := root.New(templateName).Parse(string(data)); err != nil {
			fail("%v", err)
		}
		if strings.HasSuffix(file, ".yaml") && !strings.HasPrefix(filepath.Base(file), "_") {
			rendered = append(rendered, templateName)
		}
	}

	crds, _ := filepath.Glob(filepath.Join(chartDir, "crds", "*.yaml"))
	sort.Strings(crds)
	for _, file := range crds {
		data, err := os.ReadFile(file)
		if err != nil {
			fail("%v", err)
		}
		fmt.Printf("---\n# Source: %s/crds/%s\n%s\n", name, filepath.Base(file), strings.TrimSpace(string(data)))
	}
	for _, templateName := range rendered {
		var buf bytes.Buffer
		if err := root.ExecuteTemplate(&buf, templateName, top); err != nil {
			fail("%v", err)
		}
		for _, doc := range strings.Split("\n"+buf.String(), "\n---") {
			if doc = strings.TrimSpace(doc); doc != "" {
				fmt.Printf("---\n# Source: %s\n%s\n", templateName, doc)
			}
		}
	}
}
