/*
Copyright 2026 The blis-operator Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package v1alpha1_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryExportedIdentifierIsDocumented parses the API types and fails for any exported
// type, constant, variable, function or struct field without a doc comment: the field
// comments become the CRD descriptions users read with kubectl explain.
func TestEveryExportedIdentifierIsDocumented(t *testing.T) {
	files, err := filepath.Glob("*_types.go")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, "groupversion_info.go")
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if d.Name.IsExported() && d.Doc == nil {
					t.Errorf("%s: func %s has no doc comment", fset.Position(d.Pos()), d.Name)
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch s := spec.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() && d.Doc == nil && s.Doc == nil {
							t.Errorf("%s: type %s has no doc comment", fset.Position(s.Pos()), s.Name)
						}
						if st, ok := s.Type.(*ast.StructType); ok {
							checkFields(t, fset, s.Name.Name, st)
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() && s.Doc == nil && s.Comment == nil && d.Doc == nil {
								t.Errorf("%s: %s has no doc comment", fset.Position(n.Pos()), n)
							}
						}
					}
				}
			}
		}
	}
}

func checkFields(t *testing.T, fset *token.FileSet, typeName string, st *ast.StructType) {
	t.Helper()
	for _, field := range st.Fields.List {
		if len(field.Names) == 0 {
			// Embedded: TypeMeta, ObjectMeta, ListMeta and inlined structs document themselves.
			continue
		}
		for _, n := range field.Names {
			if !n.IsExported() {
				continue
			}
			if field.Doc == nil || strings.TrimSpace(docText(field.Doc)) == "" {
				t.Errorf("%s: field %s.%s has no doc comment", fset.Position(n.Pos()), typeName, n)
			}
		}
	}
}

// docText returns the comment text without marker lines.
func docText(g *ast.CommentGroup) string {
	var b strings.Builder
	for _, line := range strings.Split(g.Text(), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "+") {
			continue
		}
		b.WriteString(line)
	}
	return b.String()
}
