/*
 * The layer rule's witness (see the top of Makefile.am). This file is linked
 * with one layer's library, whole, and the libraries below it: if the layer
 * calls anything from a layer above it, that symbol stays undefined and the
 * link fails. It does nothing when run.
 */
int main(void)
{
	return 0;
}
