// Module mutate is make mutate's mutation tester: it changes the code of a
// package in small ways, one at a time, and runs the package's tests on
// each change to see whether they notice. See main.go.
module github.com/operator-workshops/workshop/scripts/mutate

go 1.26.0
