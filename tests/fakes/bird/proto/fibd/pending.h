/* bird-glue/build.sh copies the pending set into BIRD's proto/fibd/. */
#include "../../../../../bird-glue/proto/common/pending.h"
