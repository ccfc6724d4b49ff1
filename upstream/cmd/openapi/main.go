// Command openapi writes the OpenAPI documents `podstatus serve` (the embedded API
// server, host/apiserver) serves at /openapi/v2 and /openapi/v3: Kubernetes' own
// published spec of the release this module links (k8s.io/kubernetes's
// api/openapi-spec/, go.mod), trimmed to what the embedded server serves.
//
//	go run ./cmd/openapi -out ../host/apiserver/openapi
//
// Trimmed to:
//   - the paths the server routes, and on each path the methods it answers (no
//     deletecollection, no /watch/ paths, no other kinds);
//   - the media types it speaks: JSON (and JSON watch streams for pods), and of the
//     patch types JSON patch, merge patch and strategic merge patch (no apply patch);
//   - the parameters it honours: no dryRun anywhere (the server refuses it rather
//     than write for real), no watch on nodes and leases (it serves no such watch);
//   - the definitions (v2) and component schemas (v3) those paths reach through $ref.
//
// Everything else (descriptions, the schemas themselves, the x-kubernetes-*
// extensions kubectl reads for strategic merge patches) is upstream's, unchanged.
// Written: v2.json and v2.pb (gnostic's protobuf, what kubectl asks /openapi/v2 for),
// and v3/<group-version>.json for each document of the /openapi/v3 index.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	"google.golang.org/protobuf/proto"
)

// served is every path the embedded server routes (host/apiserver/src/routes.rs) and
// the methods it answers there.
var served = map[string][]string{
	"/version/":                           {"get"},
	"/api/":                               {"get"},
	"/api/v1/":                            {"get"},
	"/apis/":                              {"get"},
	"/apis/coordination.k8s.io/":          {"get"},
	"/apis/coordination.k8s.io/v1/":       {"get"},
	"/api/v1/pods":                        {"get"},
	"/api/v1/namespaces/{namespace}/pods": {"get", "post"},
	"/api/v1/namespaces/{namespace}/pods/{name}":        {"get", "put", "patch", "delete"},
	"/api/v1/namespaces/{namespace}/pods/{name}/status": {"get", "put", "patch"},
	"/api/v1/nodes":                                                     {"get", "post"},
	"/api/v1/nodes/{name}":                                              {"get", "put", "patch", "delete"},
	"/api/v1/nodes/{name}/status":                                       {"get", "put", "patch"},
	"/apis/coordination.k8s.io/v1/leases":                               {"get"},
	"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases":        {"get", "post"},
	"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}": {"get", "put", "patch", "delete"},
}

// watched is the paths whose lists can be watched (`?watch=true`): pods only.
var watched = map[string]bool{
	"/api/v1/pods":                        true,
	"/api/v1/namespaces/{namespace}/pods": true,
}

// watchParams are dropped where there is no watch.
var watchParams = map[string]bool{"watch": true, "allowWatchBookmarks": true, "sendInitialEvents": true}

// patchTypes are the PATCH bodies the server applies.
var patchTypes = map[string]bool{
	"application/json-patch+json":            true,
	"application/merge-patch+json":           true,
	"application/strategic-merge-patch+json": true,
}

// v3Documents maps each document of the /openapi/v3 index to upstream's file.
var v3Documents = map[string]string{
	"version":                     "version_openapi.json",
	"api":                         "api_openapi.json",
	"api/v1":                      "api__v1_openapi.json",
	"apis":                        "apis_openapi.json",
	"apis/coordination.k8s.io":    "apis__coordination.k8s.io_openapi.json",
	"apis/coordination.k8s.io/v1": "apis__coordination.k8s.io__v1_openapi.json",
}

var methods = []string{"get", "put", "post", "delete", "options", "head", "patch"}

func main() {
	out := flag.String("out", "", "where to write the documents (host/apiserver/openapi)")
	flag.Parse()
	if *out == "" {
		fail(fmt.Errorf("-out DIR is needed"))
	}
	check(os.MkdirAll(*out, 0o755))
	module, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "k8s.io/kubernetes").Output()
	if err != nil {
		fail(fmt.Errorf("finding k8s.io/kubernetes: %w", err))
	}
	specs := filepath.Join(strings.TrimSpace(string(module)), "api", "openapi-spec")

	v2 := read(filepath.Join(specs, "swagger.json"))
	trimPaths(v2, "#/parameters/", v2["parameters"].(map[string]any))
	checkServed(pathsOf(v2, map[string]bool{}), "swagger.json")
	keepReached(v2, "definitions", "#/definitions/")
	keepReached(v2, "parameters", "#/parameters/")
	v2JSON := write(filepath.Join(*out, "v2.json"), v2)
	document, err := openapi_v2.ParseDocument(v2JSON)
	if err != nil {
		fail(fmt.Errorf("v2.json as gnostic's document: %w", err))
	}
	pb, err := proto.MarshalOptions{Deterministic: true}.Marshal(document)
	if err != nil {
		fail(err)
	}
	check(os.WriteFile(filepath.Join(*out, "v2.pb"), pb, 0o644))

	check(os.MkdirAll(filepath.Join(*out, "v3"), 0o755))
	inV3 := map[string]bool{}
	for name, file := range v3Documents {
		doc := read(filepath.Join(specs, "v3", file))
		trimPaths(doc, "", nil)
		pathsOf(doc, inV3)
		components := doc["components"].(map[string]any)
		reached := reachedFrom(doc["paths"], "#/components/schemas/", components["schemas"].(map[string]any))
		components["schemas"] = only(components["schemas"].(map[string]any), reached)
		write(filepath.Join(*out, "v3", strings.ReplaceAll(name, "/", "__")+".json"), doc)
	}
	checkServed(inV3, "v3 documents")
}

// trimPaths keeps the served paths and methods, the media types and parameters served.
// Parameters given by reference (v2's "#/parameters/") are resolved through params to
// read their names.
func trimPaths(doc map[string]any, paramPrefix string, params map[string]any) {
	paths := doc["paths"].(map[string]any)
	for path, item := range paths {
		keep, ok := served[path]
		if !ok {
			delete(paths, path)
			continue
		}
		item := item.(map[string]any)
		for _, method := range methods {
			if !contains(keep, method) {
				delete(item, method)
			}
		}
		for _, method := range keep {
			if item[method] == nil {
				fail(fmt.Errorf("upstream has no %s %s", method, path))
			}
		}
		dropParams := func(list any) any {
			if list == nil {
				return nil
			}
			var kept []any
			for _, param := range list.([]any) {
				name := paramName(param.(map[string]any), paramPrefix, params)
				if name == "dryRun" || (watchParams[name] && !watched[path]) {
					continue
				}
				kept = append(kept, param)
			}
			return kept
		}
		if item["parameters"] != nil {
			item["parameters"] = dropParams(item["parameters"])
		}
		for _, method := range keep {
			operation := item[method].(map[string]any)
			if operation["parameters"] != nil {
				operation["parameters"] = dropParams(operation["parameters"])
			}
			// v2: consumes and produces.
			for _, key := range []string{"consumes", "produces"} {
				if list, ok := operation[key].([]any); ok {
					operation[key] = servedMedia(list, path)
				}
			}
			// v3: the request's and the responses' content.
			if body, ok := operation["requestBody"].(map[string]any); ok {
				trimContent(body, path)
			}
			if responses, ok := operation["responses"].(map[string]any); ok {
				for _, response := range responses {
					if response, ok := response.(map[string]any); ok {
						trimContent(response, path)
					}
				}
			}
		}
	}
}

// checkServed fails unless every served path is among found.
func checkServed(found map[string]bool, where string) {
	for path := range served {
		if !found[path] {
			fail(fmt.Errorf("upstream's %s has no path %s", where, path))
		}
	}
}

func pathsOf(doc map[string]any, into map[string]bool) map[string]bool {
	for path := range doc["paths"].(map[string]any) {
		into[path] = true
	}
	return into
}

func paramName(param map[string]any, prefix string, params map[string]any) string {
	if ref, ok := param["$ref"].(string); ok && prefix != "" {
		return params[strings.TrimPrefix(ref, prefix)].(map[string]any)["name"].(string)
	}
	name, _ := param["name"].(string)
	return name
}

func trimContent(holder map[string]any, path string) {
	content, ok := holder["content"].(map[string]any)
	if !ok {
		return
	}
	for media := range content {
		if !servedMedium(media, path) {
			delete(content, media)
		}
	}
}

func servedMedia(list []any, path string) []any {
	kept := []any{}
	for _, media := range list {
		if servedMedium(media.(string), path) {
			kept = append(kept, media)
		}
	}
	return kept
}

// servedMedium: JSON, JSON watch streams where there is a watch, the patch types
// applied, and `*/*` (upstream's discovery paths).
func servedMedium(media, path string) bool {
	switch {
	case media == "application/json" || media == "*/*" || patchTypes[media]:
		return true
	case media == "application/json;stream=watch":
		return watched[path]
	}
	return false
}

// keepReached keeps, of doc[section], the entries the paths reach through $refs with
// prefix (transitively).
func keepReached(doc map[string]any, section, prefix string) {
	all := doc[section].(map[string]any)
	doc[section] = only(all, reachedFrom(doc["paths"], prefix, all))
}

// reachedFrom is the names under prefix that root refers to, and what they refer to.
func reachedFrom(root any, prefix string, all map[string]any) map[string]bool {
	reached := map[string]bool{}
	var walk func(any)
	walk = func(node any) {
		switch node := node.(type) {
		case map[string]any:
			if ref, ok := node["$ref"].(string); ok && strings.HasPrefix(ref, prefix) {
				name := strings.TrimPrefix(ref, prefix)
				if !reached[name] {
					reached[name] = true
					target, ok := all[name]
					if !ok {
						fail(fmt.Errorf("dangling $ref %s", ref))
					}
					walk(target)
				}
			}
			for _, value := range node {
				walk(value)
			}
		case []any:
			for _, value := range node {
				walk(value)
			}
		}
	}
	walk(root)
	return reached
}

func only(all map[string]any, names map[string]bool) map[string]any {
	kept := map[string]any{}
	for name := range names {
		kept[name] = all[name]
	}
	return kept
}

func contains(list []string, s string) bool {
	for _, item := range list {
		if item == s {
			return true
		}
	}
	return false
}

func read(path string) map[string]any {
	data, err := os.ReadFile(path)
	check(err)
	var doc map[string]any
	check(json.Unmarshal(data, &doc))
	return doc
}

// write writes doc as upstream's files are written (keys sorted, two spaces, no HTML
// escaping) and returns the bytes.
func write(path string, doc map[string]any) []byte {
	var buffer bytes.Buffer
	encoder := json.NewEncoder(&buffer)
	encoder.SetEscapeHTML(false)
	encoder.SetIndent("", "  ")
	check(encoder.Encode(doc))
	check(os.WriteFile(path, buffer.Bytes(), 0o644))
	return buffer.Bytes()
}

func check(err error) {
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "openapi: %v\n", err)
	os.Exit(1)
}
