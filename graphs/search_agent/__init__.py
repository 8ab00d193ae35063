"""BrowseComp-Plus's search agent (texttron/BrowseComp-Plus @ 97c637c): ``search`` and
``get_document`` tool calls over any of our retrievers until the model answers."""
