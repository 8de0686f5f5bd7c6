// The `harness` executable: an agent's only way to the judge (see harness_cli.h).
#include "agent/harness_cli.h"

int main(int argc, char** argv) { return temper::agent::harness_cli_main(argc, argv); }
