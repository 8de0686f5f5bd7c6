int main() { return 1; } // placeholder
