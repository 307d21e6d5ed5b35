"""The pure core: reading kills and memory alerts, the restart policy, histories kept as labels, the command and
who may use it, machine sizes, and every sentence and layout the bot writes. No I/O, no clock, no client
library: data in, data out, so all of it is tested without a server."""
