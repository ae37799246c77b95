package apply

// Remembered is how many objects ApplyChanged remembers.
var Remembered = size
