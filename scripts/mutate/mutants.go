package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// A mutant is one small change to one file: the bytes at [off, off+len(from))
// become to.
type mutant struct {
	file     string // absolute path
	line     int
	col      int
	off      int
	from, to string
	fn       string // the enclosing function, "" at file level
	text     string // the source line, trimmed
	// covLine and covCol are where a coverage profile tells whether a test
	// ran the mutant: its own position, but for a case clause's
	// expression, which no profile block holds, its switch's.
	covLine, covCol int
}

// kind names the change, as the report and the equivalent list say it.
func (m mutant) kind() string { return fmt.Sprintf("%s to %s", show(m.from), show(m.to)) }

func show(op string) string {
	if op == " " {
		return "nothing"
	}
	return op
}

// swaps are the operators a mutant replaces, and with what: a comparison's
// boundary and its negation, the other logical operator, the inverse
// arithmetic, the other increment and assignment. These are the mutations
// of gremlins' default set, and of PIT's "defaults" group.
var swaps = map[token.Token][]string{
	token.LSS:        {"<=", ">="},
	token.LEQ:        {"<", ">"},
	token.GTR:        {">=", "<="},
	token.GEQ:        {">", "<"},
	token.EQL:        {"!="},
	token.NEQ:        {"=="},
	token.LAND:       {"||"},
	token.LOR:        {"&&"},
	token.ADD:        {"-"},
	token.SUB:        {"+"},
	token.MUL:        {"/"},
	token.QUO:        {"*"},
	token.REM:        {"*"},
	token.INC:        {"--"},
	token.DEC:        {"++"},
	token.ADD_ASSIGN: {"-="},
	token.SUB_ASSIGN: {"+="},
}

// mutants lists the mutants of the package in dir: of each of its Go files
// but the tests and the generated ones, in the order of the source.
func mutants(dir string) ([]mutant, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	var out []mutant
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		ms, err := fileMutants(f)
		if err != nil {
			return nil, err
		}
		out = append(out, ms...)
	}
	return out, nil
}

func fileMutants(path string) ([]mutant, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	if ast.IsGenerated(f) {
		return nil, nil
	}
	lines := strings.Split(string(src), "\n")
	cases := caseExprs(f)
	var out []mutant
	add := func(fn string, pos token.Pos, tok token.Token, to ...string) {
		p, c := fset.Position(pos), fset.Position(pos)
		for _, e := range cases {
			if e.from <= pos && pos < e.to {
				c = fset.Position(e.at)
			}
		}
		for _, t := range to {
			out = append(out, mutant{file: path, line: p.Line, col: p.Column, off: p.Offset,
				from: tok.String(), to: t, fn: fn, text: strings.TrimSpace(lines[p.Line-1]),
				covLine: c.Line, covCol: c.Column})
		}
	}
	for _, decl := range f.Decls {
		fn := ""
		if d, ok := decl.(*ast.FuncDecl); ok {
			fn = d.Name.Name
		}
		if g, ok := decl.(*ast.GenDecl); ok && g.Tok == token.CONST {
			continue // constants are computed by the compiler: no test runs them
		}
		ast.Inspect(decl, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BinaryExpr:
				if n.Op == token.ADD && (isString(n.X) || isString(n.Y)) {
					return true // a concatenation has no inverse
				}
				add(fn, n.OpPos, n.Op, swaps[n.Op]...)
			case *ast.IncDecStmt:
				add(fn, n.TokPos, n.Tok, swaps[n.Tok]...)
			case *ast.AssignStmt:
				add(fn, n.TokPos, n.Tok, swaps[n.Tok]...)
			case *ast.UnaryExpr:
				if n.Op == token.NOT {
					add(fn, n.OpPos, n.Op, " ") // the negation removed
				}
			}
			return true
		})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].off < out[j].off })
	return out, nil
}

// caseExpr is the source of a case clause's expression, from and to, and
// the position of its switch, at.
type caseExpr struct{ from, to, at token.Pos }

// caseExprs lists the case clauses' expressions of f: a coverage profile
// counts the statements of a clause's body, not its expression, which runs
// whenever the switch is reached.
func caseExprs(f *ast.File) []caseExpr {
	var out []caseExpr
	ast.Inspect(f, func(n ast.Node) bool {
		var body *ast.BlockStmt
		switch n := n.(type) {
		case *ast.SwitchStmt:
			body = n.Body
		case *ast.TypeSwitchStmt:
			body = n.Body
		default:
			return true
		}
		for _, c := range body.List {
			for _, e := range c.(*ast.CaseClause).List {
				out = append(out, caseExpr{e.Pos(), e.End(), n.Pos()})
			}
		}
		return true
	})
	return out
}

func isString(e ast.Expr) bool {
	l, ok := e.(*ast.BasicLit)
	return ok && l.Kind == token.STRING
}

// apply returns src with m made.
func (m mutant) apply(src []byte) []byte {
	out := make([]byte, 0, len(src)+1)
	out = append(out, src[:m.off]...)
	out = append(out, m.to...)
	return append(out, src[m.off+len(m.from):]...)
}
