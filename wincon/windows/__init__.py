"""What the suite runs inside pods and how it reads what the tools print: Windows forms, their output table
and recordings, nltest, and the network flows' command lines and parsers (Windows and Linux controls).
"""
